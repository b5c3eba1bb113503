"""``thalos-bot skills list|check|sync [--agent ID]``: the skill library as the operator
sees it.

``check`` reads the skill files only: every skill found, its source file, duplicates,
unreadable roots, entries that resolve outside their root, and every problem of every
broken file; it exits 1 when anything is wrong. The Agent Skills specification's size
recommendations (under 500 lines, about 5,000 tokens) are shown as warnings, which do
not fail the check. ``list`` also reads
the database (read-only) to say which skills are active, and what the next start-up
sync would change. Neither writes anything. ``sync`` does now what the daemon does at
start-up: it brings the store in line with the files (a first sync of a large library
need not wait for the daemon's start).

Reading a library of :data:`~thalos_bot.skills.sync.PROGRESS_FROM` entries or more
shows its progress on stderr (a bar on a terminal, plain lines otherwise; ``--quiet``
for neither).
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast
from urllib.parse import quote

import aiosqlite
import anyio

from thalos_bot.cli.progress import show_progress
from thalos_bot.config.loader import LoadedConfig, load_settings
from thalos_bot.config.models import build_catalog
from thalos_bot.config.skills import SkillsSettings, skills_base_dir
from thalos_bot.domain.agents import AgentCatalog, AgentDefinition
from thalos_bot.skills.discovery import ScanResult, scan_roots
from thalos_bot.skills.grammar import GrammarOptions
from thalos_bot.skills.scope import allows
from thalos_bot.skills.store import SkillStore, StoredSkill
from thalos_bot.skills.sync import PROGRESS_FROM, SkillSyncError, SyncReport, sync_skills
from thalos_bot.storage.database import Database


class SkillCommandSettings(Protocol):
    """The part of ``Settings`` this command reads."""

    @property
    def skills(self) -> SkillsSettings: ...


@dataclass(frozen=True, slots=True)
class SkillsCommand:
    """Everything a run needs, taken from the configuration."""

    settings: SkillsSettings
    base_dir: Path
    agents: AgentCatalog
    database: Path | None = None
    quiet: bool = False
    """No progress display while the files are read."""


def _command(args: argparse.Namespace) -> SkillsCommand:
    loaded: LoadedConfig = load_settings(args.config)
    settings = cast("SkillCommandSettings", loaded.settings).skills
    base_dir = skills_base_dir(loaded.path)
    return SkillsCommand(
        settings,
        base_dir,
        build_catalog(loaded.settings),
        loaded.local_path,
        quiet=bool(getattr(args, "quiet", False)),
    )


def run_check(args: argparse.Namespace) -> int:
    """The handler for ``skills check``: ``args.config`` and ``args.agent``."""
    return check_skills(_command(args), args.agent)


def run_list(args: argparse.Namespace) -> int:
    """The handler for ``skills list``: ``args.config`` and ``args.agent``."""
    return list_skills(_command(args), args.agent)


def run_sync(args: argparse.Namespace) -> int:
    """The handler for ``skills sync``: ``args.config`` (and ``args.quiet``)."""
    return sync_library(_command(args))


def _agents(command: SkillsCommand, agent_id: str | None) -> list[AgentDefinition] | None:
    if agent_id is None:
        return []
    agent = command.agents.find(agent_id)
    if agent is None:
        known = ", ".join(a.id for a in command.agents)
        print(f"error: there is no agent called {agent_id!r} (agents: {known})", file=sys.stderr)
        return None
    return [agent]


def _scan(command: SkillsCommand) -> ScanResult:
    options = GrammarOptions(allow_unknown_keys=command.settings.allow_unknown_keys)
    roots = command.settings.resolved_roots(command.base_dir)
    with show_progress("skills scan", 0, quiet=command.quiet, least=PROGRESS_FROM) as progress:
        return scan_roots(roots, options, progress.update)


def _shown(path: Path, base_dir: Path) -> str:
    try:
        return str(path.relative_to(base_dir))
    except ValueError:
        return str(path)


def _table(rows: Iterable[Sequence[str]], indent: str = "  ") -> list[str]:
    rows = [list(r) for r in rows]
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return [
        (
            indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1]
        ).rstrip()
        for r in rows
    ]


def _problems(scan: ScanResult, base_dir: Path) -> list[str]:
    roots = [f"  {_shown(r.root, base_dir)}: skills root {r.reason}" for r in scan.unreadable_roots]
    errors = [
        "  " + line
        for e in (*scan.errors, *scan.outside)
        for line in e.lines(_shown(e.path, base_dir))
    ]
    duplicates = [
        f"  {_shown(d.ignored, base_dir)}: ignored: the name {d.name!r} is already taken by "
        f"{_shown(d.kept, base_dir)}"
        for d in scan.duplicates
    ]
    return [*roots, *errors, *duplicates]


def _cut(text: str, limit: int = 72) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _agent_lines(agents: Sequence[AgentDefinition], names: Sequence[str]) -> list[str]:
    lines: list[str] = []
    for agent in agents:
        if not agent.skills:
            lines.append(
                f"agent {agent.id}: no skills globs, so no skills catalogue and no skill tools"
            )
            continue
        seen = [n for n in names if allows(agent, n)]
        globs = ", ".join(agent.skills)
        listed = ", ".join(seen) if seen else "none"
        lines.append(f"agent {agent.id} (skills {globs}): sees {len(seen)}: {listed}")
    return lines


def format_check(scan: ScanResult, base_dir: Path, agents: Sequence[AgentDefinition]) -> str:
    rows = [(s.name, _shown(s.path, base_dir), _cut(s.description)) for s in scan.skills]
    lines = [f"skills ({len(rows)}):", *(_table(rows) or ["  none found"])]
    problems = _problems(scan, base_dir)
    if problems:
        lines += [f"problems ({len(problems)}):", *problems]
    warnings = [
        f"  {_shown(s.path, base_dir)}: {warning}" for s in scan.skills for warning in s.warnings
    ]
    if warnings:
        lines += [f"warnings ({len(warnings)}):", *warnings]
    lines += _agent_lines(agents, [s.name for s in scan.skills])
    return "\n".join(lines)


def check_skills(command: SkillsCommand, agent_id: str | None = None) -> int:
    """Print what the files say. Exit 0 when all is well (warnings included), 1 on any
    load error, duplicate, entry outside its root or unreadable root, 2 for an unknown
    agent."""
    agents = _agents(command, agent_id)
    if agents is None:
        return 2
    scan = _scan(command)
    print(format_check(scan, command.base_dir, agents))
    return 1 if scan.errors or scan.outside or scan.unreadable_roots or scan.duplicates else 0


async def read_stored(database: Path) -> list[StoredSkill] | None:
    """The skill rows of ``database`` (an existing file), opened read-only; None when it
    has never been synced."""
    conn = await aiosqlite.connect(f"file:{quote(str(database))}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return await SkillStore(Database(conn, str(database))).stored()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None  # never migrated for skills, so never synced
        raise
    finally:
        await conn.close()


def _state(row: StoredSkill | None, scan: ScanResult, name: str) -> tuple[str, str]:
    """The stored state, and what the next sync would change."""
    on_disk = {s.name: s for s in scan.skills}.get(name)
    if row is None:
        return "not synced", "added at next start"
    state = "active" if row.active else "inactive"
    if on_disk is None:
        if row.active and name in scan.broken_names:
            return state, "file has errors; serving the last good version"
        if row.active and scan.complete:
            return state, "file gone; deactivated at next start"
        return state, ""
    if on_disk.sha256 != row.sha256 or on_disk.path != row.source or not row.active:
        return state, "file changed; updated at next start"
    return state, ""


def format_list(
    scan: ScanResult,
    stored: Sequence[StoredSkill] | None,
    command: SkillsCommand,
    agents: Sequence[AgentDefinition],
) -> str:
    rows_by_name = {row.name: row for row in stored or ()}
    names = sorted({*rows_by_name, *(s.name for s in scan.skills)})
    if agents:
        names = [n for n in names if all(allows(a, n) for a in agents)]
    paths = {s.name: s.path for s in scan.skills}
    rows: list[tuple[str, str, str, str]] = []
    for name in names:
        row = rows_by_name.get(name)
        state, note = _state(row, scan, name)
        source = row.source if row is not None else paths[name]
        rows.append((name, state, _shown(source, command.base_dir), note))
    lines: list[str] = []
    if stored is None:
        lines.append(f"database: {command.database} has no skills yet (synced at start-up)")
    lines += [f"skills ({len(rows)}):", *(_table(rows) or ["  none"])]
    problems = _problems(scan, command.base_dir)
    if problems:
        lines += [f"load errors ({len(problems)}):", *problems]
    lines += _agent_lines(agents, names)
    return "\n".join(lines)


def list_skills(command: SkillsCommand, agent_id: str | None = None) -> int:
    """Print every skill the store or the files know. Exit 0; 1 when the database cannot
    be read; 2 for an unknown agent."""
    agents = _agents(command, agent_id)
    if agents is None:
        return 2
    scan = _scan(command)
    database = command.database
    try:
        stored = anyio.run(read_stored, database) if database and database.is_file() else None
    except sqlite3.Error as exc:
        print(f"error: cannot read the database {database}: {exc}", file=sys.stderr)
        return 1
    print(format_list(scan, stored, command, agents))
    return 0


def format_sync(report: SyncReport) -> str:
    counts = (
        f"{len(report.added)} added, {len(report.updated)} updated,"
        f" {len(report.unchanged)} unchanged, {len(report.deactivated)} deactivated"
    )
    lines = [f"synced {len(report.active)} skills ({counts})"]
    problems = len(report.errors) + len(report.outside) + len(report.duplicates)
    problems += len(report.unreadable_roots)
    if problems:
        lines.append(
            f"{problems} problem(s) left the store as it was for those files;"
            " `thalos-bot skills check` lists them"
        )
    return "\n".join(lines)


def sync_library(command: SkillsCommand) -> int:
    """Sync the store with the files, as the daemon does at start-up. Exit 0 when done
    (problems in files are reported, as at start-up), 1 when the store cannot be
    written, 130 when stopped by Ctrl-C (nothing stored: the sync writes once, at the
    end; running it again starts over)."""
    from thalos_bot.cli.stopping import EXIT_STOPPED, run_stoppably
    from thalos_bot.service.schema import ALL_MIGRATIONS
    from thalos_bot.storage.database import DatabaseError

    database = command.database
    if database is None:
        print("error: there is no state database to sync into", file=sys.stderr)
        return 1
    settings = command.settings.scanned(command.base_dir)

    async def sync() -> tuple[SyncReport | None, int, int]:
        async with await Database.open(database, migrations=ALL_MIGRATIONS) as db:
            with show_progress(
                "skills sync", 0, quiet=command.quiet, least=PROGRESS_FROM
            ) as progress:
                outcome = await run_stoppably(
                    lambda: sync_skills(db, settings, command.base_dir, on_progress=progress.update)
                )
            return outcome.value, progress.done, progress.total

    try:
        report, done, total = anyio.run(sync)
    except (DatabaseError, SkillSyncError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if report is None:
        print(
            f"stopped: {done} of {total} skill entries read; nothing was stored"
            " (the sync writes at the end): run `thalos-bot skills sync` again",
            file=sys.stderr,
        )
        return EXIT_STOPPED
    print(format_sync(report))
    return 0
