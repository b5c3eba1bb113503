"""Which skills may load: each found skill's files against what the operator accepted.

A skill loads when the digest of all its files equals its pin. Otherwise it is held:

- ``changed``: it was accepted, and a file of its folder has changed since;
- ``new``: it was never accepted. On a **fresh** store (no skill ever synced, none
  pinned: the first start after ``thalos-bot init``) every skill found is accepted as
  it is, as the operator just put it there; from then on a new skill waits;
- ``flagged``: its text has findings (hidden characters or comments, a request for
  secrets): never accepted without a review, not even on a fresh store;
- ``refused``: its name looks like the name of a trusted skill (or one loaded earlier
  in the same sync) without being it (``рdf`` with a Cyrillic ``р`` beside ``pdf``);
  no review accepts it: it must be renamed.

A pin from before pinning (``legacy:``, the digest of ``SKILL.md`` alone) is taken up
as a full pin when that file is unchanged and the skill has no findings.

:func:`assess` is pure; :func:`inspect` reads a skill's files (blocking).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from thalos_bot.skills.document import SkillDocument, SkillLoadError
from thalos_bot.skills.lookalike import shadowed
from thalos_bot.skills.manifest import Manifest, ManifestError, file_manifest, folder_manifest
from thalos_bot.skills.pins import Hold, HoldReason, Pin
from thalos_bot.skills.screen import Finding, screen


@dataclass(frozen=True, slots=True)
class Inspected:
    """A skill that passed the grammar, with its files and what screening found."""

    doc: SkillDocument
    manifest: Manifest
    findings: tuple[Finding, ...] = ()


def inspect(doc: SkillDocument) -> Inspected:
    """Read every file of ``doc``'s skill. Raises :class:`SkillLoadError` when its files
    cannot be pinned (a link out of its folder, a bound passed)."""
    try:
        if doc.folder is not None:
            manifest = folder_manifest(doc.folder)
        else:
            manifest = file_manifest(doc.path)
    except ManifestError as exc:
        raise SkillLoadError.single(doc.path, f"cannot be pinned: {exc}") from None
    return Inspected(doc, manifest, screen(manifest))


@dataclass(frozen=True, slots=True)
class Assessment:
    load: tuple[SkillDocument, ...]
    """The skills that may load, in the order found."""
    pin: tuple[Pin, ...]
    """Pins to record now (a fresh store's first sync, a legacy pin taken up)."""
    holds: tuple[Hold, ...]
    """The skills held back, by name."""


def _hold(item: Inspected, reason: HoldReason, details: Sequence[str], now: datetime) -> Hold:
    found = [f.describe() for f in item.findings]
    return Hold(
        item.doc.name,
        reason,
        item.manifest.digest,
        str(item.doc.path),
        (*details, *found),
        now,
    )


def assess(
    found: Sequence[Inspected], pins: Mapping[str, Pin], *, fresh: bool, now: datetime
) -> Assessment:
    """What loads, what is pinned now and what is held, for the skills ``found``."""
    load: list[SkillDocument] = []
    new_pins: list[Pin] = []
    holds: list[Hold] = []
    trusted = list(pins)
    for item in found:
        name = item.doc.name
        like = shadowed(name, trusted)
        if like is not None:
            why = f"its name looks like the trusted skill {like!r}: rename it"
            holds.append(_hold(item, "refused", [why], now))
            continue
        pin = pins.get(name)
        digest = item.manifest.digest
        if pin is not None and pin.digest == digest:
            load.append(item.doc)
        elif item.findings:
            why = "its text has findings: review it" + (" (it changed)" if pin else "")
            holds.append(_hold(item, "flagged", [why], now))
        elif pin is not None and pin.legacy_sha256 == item.doc.sha256:
            load.append(item.doc)
            new_pins.append(Pin.of(name, item.manifest, now, "upgrade"))
        elif pin is not None:
            holds.append(_hold(item, "changed", ["its files changed since it was accepted"], now))
        elif fresh:
            load.append(item.doc)
            new_pins.append(Pin.of(name, item.manifest, now, "first-sync"))
        else:
            holds.append(_hold(item, "new", ["it has not been reviewed yet"], now))
        if load and load[-1] is item.doc and name not in trusted:
            trusted.append(name)
    return Assessment(tuple(load), tuple(new_pins), tuple(sorted(holds, key=lambda h: h.name)))
