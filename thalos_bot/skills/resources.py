"""A skill folder's other files (``scripts/…``, ``references/…``, ``assets/…``): listed
when the skill is loaded, read one at a time, never run.

Everything stays inside the folder. A path is resolved (symlinks and ``..`` included)
and must land inside the folder's real path; an absolute path, a path that leaves the
folder, a hidden file (a name starting with ``.``: ``.env``, ``.git/…``) and a folder
that has since been swapped for a link all answer exactly like a file that does not
exist. Only UTF-8 text is returned, at most :data:`MAX_RESOURCE_BYTES`.

These are plain blocking functions; callers run them in a worker thread.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from thalos_bot.skills.document import SKILL_FILE, SKILL_FILE_LOWER

MAX_RESOURCE_BYTES = 256 * 1024
"""The largest file ``skills__read`` returns."""
MAX_LISTED = 100
"""The most files ``skills__load`` lists; more are counted, not named."""
MAX_DEPTH = 4
"""How many folder levels below the skill folder are listed."""
MAX_FOLDERS = 200
"""The most folders one listing walks through."""


@dataclass(frozen=True, slots=True)
class Listing:
    files: tuple[str, ...]
    """Paths relative to the skill folder, ``/``-separated: shallower files first, then
    by name (so a listing cut at its bound keeps the top of the folder)."""
    complete: bool
    """False when the listing stopped at a bound: there are files it does not name."""
    more: int = 0
    """Files seen but not named (a lower bound when the walk itself stopped early)."""


@dataclass(frozen=True, slots=True)
class Resource:
    """The outcome of reading one path: ``text`` for ``kind == "text"``."""

    kind: Literal["text", "missing", "folder", "binary", "too-large"]
    path: str = ""
    """The path relative to the skill folder, as resolved."""
    text: str = ""
    size: int = 0


MISSING = Resource("missing")


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _hidden(parts: tuple[str, ...]) -> bool:
    return any(part.startswith(".") for part in parts)


def folder_intact(folder: Path) -> bool:
    """True when ``folder`` (a real path recorded at sync) still resolves to itself."""
    return _real(folder) == folder and folder.is_dir()


def list_files(folder: Path) -> Listing:
    """The regular files under ``folder`` (bounded), without the skill file itself,
    hidden entries, and links that resolve outside the folder."""
    if not folder_intact(folder):
        return Listing((), complete=True)
    found: list[str] = []
    more = 0
    complete = True
    walked = 0
    pending: list[tuple[Path, int]] = [(folder, 0)]
    while pending:
        current, depth = pending.pop(0)
        walked += 1
        if walked > MAX_FOLDERS:
            complete = False
            break
        try:
            with os.scandir(current) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if depth == 0 and entry.name in (SKILL_FILE, SKILL_FILE_LOWER):
                continue
            path = Path(entry.path)
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth + 1 < MAX_DEPTH:
                        pending.append((path, depth + 1))
                    else:
                        complete = False
                    continue
                real = _real(path)
                if not real.is_relative_to(folder) or not real.is_file():
                    continue
            except OSError:
                continue
            if len(found) < MAX_LISTED:
                found.append(path.relative_to(folder).as_posix())
            else:
                more += 1
                complete = False
    return Listing(tuple(found), complete, more)


def _relative(requested: str) -> PurePosixPath | None:
    """``requested`` as a relative path, or None for one we refuse outright."""
    if not requested or "\x00" in requested or requested.startswith(("/", "\\", "~")):
        return None
    path = PurePosixPath(requested.replace("\\", "/"))
    if path.is_absolute() or _hidden(tuple(p for p in path.parts if p not in (".", ".."))):
        return None
    return path


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 64 * 1024))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_file(folder: Path, requested: str) -> Resource:
    """One file of the skill folder ``folder`` (its real path, as synced)."""
    relative = _relative(requested)
    if relative is None or not folder_intact(folder):
        return MISSING
    target = _real(folder / relative)
    if target == folder:
        return Resource("folder", ".")
    if not target.is_relative_to(folder):
        return MISSING
    inside = target.relative_to(folder)
    if _hidden(inside.parts):
        return MISSING
    shown = inside.as_posix()
    try:
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except IsADirectoryError:
        return Resource("folder", shown)
    except OSError:
        return MISSING
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            return Resource("folder", shown)
        if not stat.S_ISREG(info.st_mode):
            return MISSING
        if info.st_size > MAX_RESOURCE_BYTES:
            return Resource("too-large", shown, size=info.st_size)
        raw = _read_at_most(fd, MAX_RESOURCE_BYTES + 1)
    except OSError:
        return MISSING
    finally:
        os.close(fd)
    if len(raw) > MAX_RESOURCE_BYTES:
        return Resource("too-large", shown, size=len(raw))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return Resource("binary", shown, size=len(raw))
    if "\x00" in text:
        return Resource("binary", shown, size=len(raw))
    return Resource("text", shown, text=text.replace("\r\n", "\n"), size=len(raw))
