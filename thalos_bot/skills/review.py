"""What ``thalos-bot skills review`` shows and does: a skill's files against what was
accepted, and accepting them.

The diff compares each text file with its accepted text (a new skill against nothing),
file by file in path order; a file without text (binary, large) shows its size and
digest. Invisible characters are shown as ``<U+200B>`` so what hides on screen does not
hide in the review. Accepting pins exactly the files the review showed: if they change
in between, the next sync holds the skill again.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from thalos_bot.config.skills import SkillsSettings
from thalos_bot.skills.discovery import scan_roots
from thalos_bot.skills.document import SkillLoadError
from thalos_bot.skills.grammar import GrammarOptions
from thalos_bot.skills.lookalike import shadowed
from thalos_bot.skills.manifest import Manifest, PinnedFile
from thalos_bot.skills.pinning import Inspected, inspect
from thalos_bot.skills.pins import Pin

MAX_DIFF_LINES = 400
"""The most diff lines shown for one file; the rest are counted."""


class ReviewError(Exception):
    """The skill cannot be reviewed or accepted; ``str()`` says why."""


def visible(text: str) -> str:
    """``text`` with every invisible format character shown as ``<U+XXXX>``."""
    return "".join(
        f"<U+{ord(c):04X}>" if unicodedata.category(c) == "Cf" and c != "\ufeff" else c
        for c in text
    )


def _lines(item: PinnedFile | None) -> list[str]:
    if item is None or item.text is None:
        return []
    return [visible(line) for line in item.text.split("\n")]


def _file_diff(path: str, before: PinnedFile | None, after: PinnedFile | None) -> list[str]:
    if before is not None and after is not None and before.sha256 == after.sha256:
        return []
    textual = (before is None or before.text is not None) and (
        after is None or after.text is not None
    )
    if not textual:

        def said(f: PinnedFile | None) -> str:
            return "none" if f is None else f"{f.size:,} bytes, sha256 {f.sha256[:16]}…"

        return [f"~ {path}: not text ({said(before)} -> {said(after)})"]
    diff = list(
        difflib.unified_diff(
            _lines(before),
            _lines(after),
            "/dev/null" if before is None else f"accepted/{path}",
            "/dev/null" if after is None else f"now/{path}",
            lineterm="",
        )
    )
    if len(diff) > MAX_DIFF_LINES:
        diff = [*diff[:MAX_DIFF_LINES], f"… {len(diff) - MAX_DIFF_LINES} more diff lines"]
    return diff


def render_diff(pin: Pin | None, manifest: Manifest) -> list[str]:
    """Every changed file of ``manifest`` against ``pin`` (None: a new skill)."""
    before = {f.path: f for f in pin.files} if pin is not None else {}
    after = manifest.by_path()
    lines: list[str] = []
    for path in sorted({*before, *after}):
        lines.extend(_file_diff(path, before.get(path), after.get(path)))
    return lines


@dataclass(frozen=True, slots=True)
class Found:
    """The skill named for review as its files are now, and the other skills found."""

    item: Inspected
    others: tuple[str, ...]


def _search(scan_names: Sequence[str], name: str) -> str:
    close = difflib.get_close_matches(name, scan_names, n=3)
    return f"; did you mean {', '.join(close)}?" if close else ""


def find_skill(settings: SkillsSettings, base_dir: Path, name: str) -> Found:
    """Read the skill ``name`` and its files (blocking). Raises :class:`ReviewError`
    when no valid skill of that name is found or its files cannot be pinned."""
    roots = settings.resolved_roots(base_dir)
    scan = scan_roots(roots, GrammarOptions(allow_unknown_keys=settings.allow_unknown_keys))
    names = [doc.name for doc in scan.skills]
    doc = next((d for d in scan.skills if d.name == name), None)
    if doc is None:
        broken = [e for e in (*scan.errors, *scan.outside) if e.path.parent.name == name]
        if broken:
            raise ReviewError("; ".join(line for e in broken for line in e.lines()))
        raise ReviewError(
            f"there is no skill called {name!r} in the skills roots{_search(names, name)}"
        )
    try:
        item = inspect(doc)
    except SkillLoadError as exc:
        raise ReviewError(exc.describe()) from None
    return Found(item, tuple(n for n in names if n != name))


def acceptable(found: Found, pins: dict[str, Pin], at: datetime) -> Pin:
    """The pin that accepts ``found`` as it is now. Raises :class:`ReviewError` for a
    name that looks like another trusted or present skill's."""
    name = found.item.doc.name
    like = shadowed(name, [*pins, *found.others])
    if like is not None:
        raise ReviewError(
            f"{name!r} looks like the skill {like!r} without being it: it cannot be "
            "accepted; rename its folder (and its name) to something that reads differently"
        )
    return Pin.of(name, found.item.manifest, at, "operator")


def summary(found: Found, pin: Pin | None) -> Iterator[str]:
    """The head of a review: where the skill is, its state, and every finding."""
    item = found.item
    yield f"skill {item.doc.name}: {item.doc.path}"
    digest = item.manifest.digest
    if pin is None:
        yield "  never accepted: every file is shown as new"
    elif pin.digest == digest:
        yield f"  accepted {pin.accepted_at:%Y-%m-%d %H:%M} ({pin.accepted_by}); unchanged since"
    else:
        yield f"  accepted {pin.accepted_at:%Y-%m-%d %H:%M} ({pin.accepted_by}); changed since"
    yield f"  {len(item.manifest.files)} file(s), sha256 {digest}"
    if item.findings:
        yield f"  findings ({len(item.findings)}): read these before accepting"
        yield from (f"    ! {visible(f.describe())}" for f in item.findings)
