"""Start-up sync: the skill files are the truth, the store mirrors them, one way.

Roots are read in configured order and the first to offer a name keeps it. A file whose
SHA-256 (and place) is unchanged is not rewritten. A skill whose file is gone is
deactivated, but only when every root could be read: a typo in a root's path must never
retire skills. A broken file is logged (every problem) and skipped, leaving whatever was
loaded from it before as it was. An entry that resolves outside its root is logged and
skipped, and whatever was loaded from it before is deactivated. A failure to store is
raised as :class:`SkillSyncError`.

Skills are pinned (:mod:`~thalos_bot.skills.pinning`): a skill loads only when all its
files are as the operator accepted them; one that is new, changed, flagged or refused
is held (``skill-held``, with the command that reviews it) and, if it was loaded
before, deactivated. A skill whose files cannot be pinned (a link out of its folder)
is skipped like an entry outside its root.

A library of :data:`PROGRESS_FROM` entries or more logs ``skills_sync_progress`` events
(done/total) while its files are read, every tenth of the way or every 30 seconds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite
import anyio.to_thread
import structlog

from thalos_bot.config.skills import SkillsSettings
from thalos_bot.skills.discovery import Duplicate, RootProblem, ScanResult, scan_roots
from thalos_bot.skills.document import SkillDocument, SkillLoadError
from thalos_bot.skills.grammar import GrammarOptions
from thalos_bot.skills.pinning import Inspected, assess, inspect
from thalos_bot.skills.pins import Hold, PinStore, replace_holds, write_pins
from thalos_bot.skills.store import SkillStore, StoredSkill
from thalos_bot.storage.database import Database
from thalos_bot.telemetry.progress import Milestones

log = structlog.get_logger(__name__)

PROGRESS_FROM = 100
"""Entries in the skills roots from which reading them logs its progress."""


class SkillSyncError(Exception):
    """The skills could not be stored. The host must not start."""


@dataclass(frozen=True, slots=True)
class SyncReport:
    roots: tuple[Path, ...]
    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    deactivated: tuple[str, ...] = ()
    errors: tuple[SkillLoadError, ...] = ()
    duplicates: tuple[Duplicate, ...] = ()
    unreadable_roots: tuple[RootProblem, ...] = ()
    outside: tuple[SkillLoadError, ...] = ()
    held: tuple[Hold, ...] = ()
    pinned: tuple[str, ...] = ()
    """Skills accepted by this sync itself (a fresh store's first, a legacy pin)."""

    @property
    def active(self) -> tuple[str, ...]:
        """Every skill the files define now, by name."""
        return tuple(sorted((*self.added, *self.updated, *self.unchanged)))


@dataclass(frozen=True, slots=True)
class SyncPlan:
    added: tuple[SkillDocument, ...]
    updated: tuple[SkillDocument, ...]
    unchanged: tuple[str, ...]
    deactivate: tuple[str, ...]


def plan_sync(scan: ScanResult, stored: dict[str, StoredSkill]) -> SyncPlan:
    """What to write, given what the files say and what the store holds."""
    added: list[SkillDocument] = []
    updated: list[SkillDocument] = []
    unchanged: list[str] = []
    for doc in scan.skills:
        before = stored.get(doc.name)
        if before is None:
            added.append(doc)
        elif (
            before.active
            and before.sha256 == doc.sha256
            and before.source == doc.path
            and before.folder == doc.folder
        ):
            unchanged.append(doc.name)
        else:
            updated.append(doc)
    deactivate: list[str] = []
    if scan.complete:
        present = {doc.name for doc in scan.skills} | scan.broken_names
        deactivate = [name for name, row in stored.items() if row.active and name not in present]
    return SyncPlan(tuple(added), tuple(updated), tuple(unchanged), tuple(sorted(deactivate)))


def _log_scan(scan: ScanResult) -> None:
    for problem in scan.unreadable_roots:
        log.warning("skills-root-unreadable", root=str(problem.root), reason=problem.reason)
    for error in scan.errors:
        for fault in error.problems:
            log.warning(
                "skill-load-error", path=str(error.path), key=fault.key, reason=fault.reason
            )
    for error in scan.outside:
        log.warning("skill-outside-root", path=str(error.path), reason=error.reason)
    for doc in scan.skills:
        for advice in doc.warnings:
            log.info("skill-advice", skill=doc.name, path=str(doc.path), advice=advice)
    for dup in scan.duplicates:
        log.warning("skill-duplicate", skill=dup.name, kept=str(dup.kept), ignored=str(dup.ignored))


def inspect_all(
    docs: Sequence[SkillDocument],
) -> tuple[tuple[Inspected, ...], tuple[SkillLoadError, ...]]:
    """Every skill's files read and screened (blocking); those that cannot be pinned
    apart."""
    inspected: list[Inspected] = []
    failed: list[SkillLoadError] = []
    for doc in docs:
        try:
            inspected.append(inspect(doc))
        except SkillLoadError as exc:
            failed.append(exc)
    return tuple(inspected), tuple(failed)


def _log_holds(holds: Sequence[Hold]) -> None:
    for hold in holds:
        log.warning(
            "skill-held",
            skill=hold.name,
            reason=hold.reason,
            details=list(hold.details),
            fix=f"thalos-bot skills review {hold.name}",
        )


def _logged(also: Callable[[int, int], None] | None) -> Callable[[int, int], None]:
    milestones = Milestones(0)

    def heard(done: int, total: int) -> None:
        due = milestones.update(done, total)
        if due is not None and total >= PROGRESS_FROM:
            log.info("skills_sync_progress", done=done, total=total)
        if also is not None:
            also(done, total)

    return heard


async def sync_skills(
    db: Database,
    settings: SkillsSettings,
    base_dir: Path,
    *,
    now: datetime | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> SyncReport:
    """Bring the store in line with the skill files under ``settings.roots`` (relative
    roots from ``base_dir``). Raises :class:`SkillSyncError` when the store fails.
    ``on_progress`` hears ``(entries read, entries found)`` from the scanning thread."""
    roots = settings.resolved_roots(base_dir)
    options = GrammarOptions(allow_unknown_keys=settings.allow_unknown_keys)
    scan = await anyio.to_thread.run_sync(
        scan_roots, roots, options, _logged(on_progress), abandon_on_cancel=True
    )
    inspected, unpinnable = await anyio.to_thread.run_sync(
        inspect_all, scan.skills, abandon_on_cancel=True
    )
    scan = replace(scan, outside=(*scan.outside, *unpinnable))
    _log_scan(scan)
    store = SkillStore(db)
    pin_store = PinStore(db)
    at = now or datetime.now(UTC)
    try:
        stored = {row.name: row for row in await store.stored()}
        pins = await pin_store.pins()
        judged = assess(inspected, pins, fresh=not stored and not pins, now=at)
        plan = plan_sync(replace(scan, skills=judged.load), stored)

        async def record(conn: aiosqlite.Connection) -> None:
            await write_pins(conn, judged.pin)
            await replace_holds(conn, judged.holds, at)

        await store.write((*plan.added, *plan.updated), plan.deactivate, at, also=record)
    except Exception as exc:
        log.exception("skills-sync-failed")
        raise SkillSyncError(f"the skills could not be stored: {exc}") from exc
    if not scan.complete:
        log.warning(
            "skills-deactivation-skipped",
            why="a root could not be read",
            roots=[str(p.root) for p in scan.unreadable_roots],
        )
    report = SyncReport(
        roots=tuple(roots),
        added=tuple(doc.name for doc in plan.added),
        updated=tuple(doc.name for doc in plan.updated),
        unchanged=plan.unchanged,
        deactivated=plan.deactivate,
        errors=scan.errors,
        duplicates=scan.duplicates,
        unreadable_roots=scan.unreadable_roots,
        outside=scan.outside,
        held=judged.holds,
        pinned=tuple(pin.name for pin in judged.pin),
    )
    _log_holds(report.held)
    log.info(
        "skills-synced",
        active=len(report.active),
        added=len(report.added),
        updated=len(report.updated),
        unchanged=len(report.unchanged),
        deactivated=len(report.deactivated),
        errors=len(report.errors),
        outside=len(report.outside),
        held=len(report.held),
    )
    return report
