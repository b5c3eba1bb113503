"""Finding skill files: each root scanned one level deep, in configured order.

``<root>/<name>/SKILL.md`` and ``<root>/<name>.md`` are skills; a ``SKILL.md`` directly in
a root is an error (it has no name). A folder without ``SKILL.md`` but with ``skill.md``
is a skill too, as the reference validator has it. Names starting with ``.`` are
ignored, and so are other files and folders without a skill file. The first root to
offer a name keeps it, even when its file is broken, so a typo never hands a skill to
another root.

Everything stays inside its root: a skill file or folder that resolves elsewhere (a
symlink ``<root>/leak.md -> ../outside/secret.md``, a folder linked out of the root, a
``SKILL.md`` linked out of its folder) is skipped and reported in ``outside``, never read.
Its name stays claimed, but nothing loaded from it before is kept.

Scanning only reads files; it is a plain function, safe to run in a worker thread.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from thalos_bot.skills.document import (
    SKILL_FILE,
    SKILL_FILE_LOWER,
    SKILL_SUFFIX,
    SkillDocument,
    SkillLoadError,
)
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
    outside: tuple[SkillLoadError, ...] = ()
    """Entries skipped because they resolve outside their root (or folder)."""

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
    offers (lower-cased), None for an entry that offers no name. ``escaped`` marks an
    entry that resolves outside its root."""

    path: Path
    claim: str | None
    candidate: SkillCandidate | None = None
    error: SkillLoadError | None = None
    escaped: bool = False


def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(path))


def _escape(path: Path, real: Path, where: str) -> SkillLoadError:
    return SkillLoadError.single(path, f"resolves outside its {where} (to {real}); skipped")


def _claim(name: str) -> str:
    return unicodedata.normalize("NFKC", name).lower()


def _folder_entry(entry: os.DirEntry[str], real_folder: Path) -> Found | None:
    folder = Path(entry.path)
    claim = _claim(entry.name)
    try:
        names = [e.name for e in _listing(folder)]
    except OSError as exc:
        error = SkillLoadError.single(folder, f"the folder {_reason(exc)}")
        return Found(folder / SKILL_FILE, claim, error=error)
    chosen = next((n for n in (SKILL_FILE, SKILL_FILE_LOWER) if n in names), None)
    if chosen is None:
        near = [n for n in names if n.casefold() == SKILL_FILE.casefold()]
        if not near:
            return None  # a folder that is not a skill (assets, drafts, ...)
        wrong = folder / near[0]
        reason = f"a skill folder's file must be named exactly {SKILL_FILE!r}"
        return Found(wrong, claim, error=SkillLoadError.single(wrong, reason))
    path = folder / chosen
    real = _real(path)
    if not real.is_relative_to(real_folder):
        return Found(path, claim, error=_escape(path, real, "skill folder"), escaped=True)
    return Found(path, claim, SkillCandidate(path, entry.name, "folder", real_folder))


def root_entries(root: Path) -> list[Found]:
    """The skill entries of ``root`` in name order, errors in place. Raises
    :class:`OSError` when ``root`` itself cannot be listed."""
    found: list[Found] = []
    listing = _listing(root)
    real_root = _real(root)
    for entry in listing:
        if entry.name.startswith("."):
            continue
        try:
            is_dir = entry.is_dir()
            is_file = not is_dir and entry.is_file()
        except OSError:
            continue
        path = Path(entry.path)
        is_skill_file = is_file and entry.name.endswith(SKILL_SUFFIX) and entry.name != SKILL_SUFFIX
        if not (is_dir or is_skill_file):
            continue
        name = entry.name if is_dir else entry.name[: -len(SKILL_SUFFIX)]
        real = _real(path)
        if real == real_root or not real.is_relative_to(real_root):
            claim = None if entry.name == SKILL_FILE else _claim(name)
            found.append(Found(path, claim, error=_escape(path, real, "skills root"), escaped=True))
        elif is_dir:
            folder = _folder_entry(entry, real)
            if folder is not None:
                found.append(folder)
        elif entry.name == SKILL_FILE:
            reason = (
                f"{SKILL_FILE} directly in a skills root has no name; "
                f"move it to <root>/<name>/{SKILL_FILE}"
            )
            found.append(Found(path, None, error=SkillLoadError.single(path, reason)))
        else:
            found.append(Found(path, _claim(name), SkillCandidate(path, name, "file")))
    return found


def scan_roots(
    roots: Sequence[Path],
    options: GrammarOptions | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> ScanResult:
    """Scan ``roots`` in order and parse every winning file. ``on_progress`` hears
    ``(entries read, entries found)``: once when every root is listed, then after each
    entry."""
    skills: list[SkillDocument] = []
    errors: list[SkillLoadError] = []
    duplicates: list[Duplicate] = []
    unreadable: list[RootProblem] = []
    broken: set[str] = set()
    outside: list[SkillLoadError] = []
    claimed: dict[str, Path] = {}
    listed: list[list[Found]] = []
    for root in roots:
        try:
            listed.append(root_entries(root))
        except OSError as exc:
            unreadable.append(RootProblem(root, _reason(exc)))
    total = sum(len(entries) for entries in listed)
    done = 0
    if on_progress is not None:
        on_progress(0, total)
    for entries in listed:
        for found in entries:
            done += 1
            claim = found.claim
            if claim is not None and claim in claimed:
                duplicates.append(Duplicate(claim, claimed[claim], found.path))
            else:
                if claim is not None:
                    claimed[claim] = found.path
                error = found.error
                if found.candidate is not None:
                    try:
                        skills.append(read_skill(found.candidate, options))
                    except SkillLoadError as exc:
                        error = exc
                if error is not None and found.escaped:
                    outside.append(error)
                elif error is not None:
                    errors.append(error)
                    if claim is not None:
                        broken.add(claim)
            if on_progress is not None:
                on_progress(done, total)
    return ScanResult(
        tuple(skills),
        tuple(errors),
        tuple(duplicates),
        tuple(unreadable),
        frozenset(broken),
        tuple(outside),
    )
