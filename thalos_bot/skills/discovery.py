"""Finding skill files: each root scanned one level deep, in configured order.

``<root>/<name>/SKILL.md`` and ``<root>/<name>.md`` are skills; a ``SKILL.md`` directly in
a root is an error (it has no name). Names starting with ``.`` are ignored, and so are
other files and folders without a ``SKILL.md``. The first root to offer a name keeps it,
even when its file is broken, so a typo never hands a skill to another root.

Scanning only reads files; it is a plain function, safe to run in a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from thalos_bot.skills.document import SKILL_FILE, SKILL_SUFFIX, SkillDocument, SkillLoadError
from thalos_bot.skills.grammar import GrammarOptions, SkillCandidate, read_skill


@dataclass(frozen=True, slots=True)
class RootProblem:
    """A root that could not be listed."""

    root: Path
    reason: str


@dataclass(frozen=True, slots=True)
class Duplicate:
    """Two files offer the same name; the one in ``kept`` (earlier) wins."""

    name: str
    kept: Path
    ignored: Path


@dataclass(frozen=True, slots=True)
class ScanResult:
    skills: tuple[SkillDocument, ...]
    """The valid winning skills, in root then name order."""
    errors: tuple[SkillLoadError, ...]
    duplicates: tuple[Duplicate, ...]
    unreadable_roots: tuple[RootProblem, ...]
    broken_names: frozenset[str]
    """Names (lower-cased) whose winning file has an error: whatever was loaded from them
    before stays as it was."""

    @property
    def complete(self) -> bool:
        """True when every root could be read."""
        return not self.unreadable_roots


def _listing(folder: Path) -> list[os.DirEntry[str]]:
    with os.scandir(folder) as entries:
        return sorted(entries, key=lambda e: e.name)


def _reason(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "does not exist"
    if isinstance(exc, NotADirectoryError):
        return "is not a folder"
    return f"cannot be read ({exc.strerror or 'I/O error'})"


@dataclass(frozen=True, slots=True)
class Found:
    """One entry of a root: a skill file to parse, or an error. ``claim`` is the name it
    offers (lower-cased), None for an entry that offers no name."""

    path: Path
    claim: str | None
    candidate: SkillCandidate | None = None
    error: SkillLoadError | None = None


def _folder_entry(entry: os.DirEntry[str]) -> Found | None:
    folder = Path(entry.path)
    path = folder / SKILL_FILE
    claim = entry.name.casefold()
    try:
        names = [e.name for e in _listing(folder)]
    except OSError as exc:
        return Found(path, claim, error=SkillLoadError(folder, f"the folder {_reason(exc)}"))
    if SKILL_FILE in names:
        return Found(path, claim, candidate=SkillCandidate(path, entry.name, "folder"))
    near = [n for n in names if n.casefold() == SKILL_FILE.casefold()]
    if near:
        wrong = folder / near[0]
        reason = f"a skill folder's file must be named exactly {SKILL_FILE!r}"
        return Found(wrong, claim, error=SkillLoadError(wrong, reason))
    return None  # a folder that is not a skill (assets, drafts, ...)


def root_entries(root: Path) -> list[Found]:
    """The skill entries of ``root`` in name order, errors in place. Raises
    :class:`OSError` when ``root`` itself cannot be listed."""
    found: list[Found] = []
    for entry in _listing(root):
        if entry.name.startswith("."):
            continue
        try:
            is_dir = entry.is_dir()
            is_file = not is_dir and entry.is_file()
        except OSError:
            continue
        path = Path(entry.path)
        if is_dir:
            folder = _folder_entry(entry)
            if folder is not None:
                found.append(folder)
        elif is_file and entry.name == SKILL_FILE:
            reason = (
                f"{SKILL_FILE} directly in a skills root has no name; "
                f"move it to <root>/<name>/{SKILL_FILE}"
            )
            found.append(Found(path, None, error=SkillLoadError(path, reason)))
        elif is_file and entry.name.endswith(SKILL_SUFFIX) and entry.name != SKILL_SUFFIX:
            name = entry.name[: -len(SKILL_SUFFIX)]
            found.append(Found(path, name.casefold(), SkillCandidate(path, name, "file")))
    return found


def scan_roots(roots: Sequence[Path], options: GrammarOptions | None = None) -> ScanResult:
    """Scan ``roots`` in order and parse every winning file."""
    skills: list[SkillDocument] = []
    errors: list[SkillLoadError] = []
    duplicates: list[Duplicate] = []
    unreadable: list[RootProblem] = []
    broken: set[str] = set()
    claimed: dict[str, Path] = {}
    for root in roots:
        try:
            entries = root_entries(root)
        except OSError as exc:
            unreadable.append(RootProblem(root, _reason(exc)))
            continue
        for found in entries:
            claim = found.claim
            if claim is not None and claim in claimed:
                duplicates.append(Duplicate(claim, claimed[claim], found.path))
                continue
            if claim is not None:
                claimed[claim] = found.path
            error = found.error
            if found.candidate is not None:
                try:
                    skills.append(read_skill(found.candidate, options))
                except SkillLoadError as exc:
                    error = exc
            if error is not None:
                errors.append(error)
                if claim is not None:
                    broken.add(claim)
    return ScanResult(
        tuple(skills), tuple(errors), tuple(duplicates), tuple(unreadable), frozenset(broken)
    )
