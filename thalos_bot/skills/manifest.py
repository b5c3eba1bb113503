"""A skill's files as pinned: every file of its folder, path-sorted, with one digest.

The digest covers every regular file under the skill folder (hidden ones included: a
change anywhere in the folder is seen), each as its relative path, its kind and the
SHA-256 of its bytes. A single-file skill (``<root>/<name>.md``) is that one file.

A link inside the folder is followed only while it stays inside: a file or a folder
that resolves outside the skill folder makes the whole skill refused
(:class:`ManifestError`), never hashed or read. So does a folder past the bounds
(:data:`MAX_FILES`, :data:`MAX_TOTAL_BYTES`, :data:`MAX_DEPTH`): a skill that cannot be
pinned is not loaded.

UTF-8 text files up to :data:`MAX_TEXT_BYTES` keep their text, so a review can show a
diff against what was accepted; other files keep only their digest.

These are plain blocking functions; callers run them in a worker thread.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

MAX_FILES = 500
"""The most files a pinned skill folder may hold."""
MAX_TOTAL_BYTES = 16 * 1024 * 1024
"""The most bytes all of a skill folder's files may hold together."""
MAX_DEPTH = 8
"""How many folder levels below the skill folder are read."""
MAX_TEXT_BYTES = 256 * 1024
"""The largest file whose text is kept for a review's diff."""


class ManifestError(Exception):
    """The skill's files cannot be pinned; ``str()`` says why, naming the file."""


@dataclass(frozen=True, slots=True)
class PinnedFile:
    """One file of a skill: ``path`` relative to the skill folder, ``/``-separated."""

    path: str
    sha256: str
    size: int
    text: str | None = None
    """The file's text (LF line endings) when it is UTF-8 and small; None otherwise."""


@dataclass(frozen=True, slots=True)
class Manifest:
    files: tuple[PinnedFile, ...]
    """Every file, by path."""

    @property
    def digest(self) -> str:
        """One SHA-256 over every file's path, size and digest, in path order."""
        return digest_of(self.files)

    def by_path(self) -> Mapping[str, PinnedFile]:
        return {f.path: f for f in self.files}


def digest_of(files: tuple[PinnedFile, ...]) -> str:
    whole = hashlib.sha256()
    for item in sorted(files, key=lambda f: f.path):
        whole.update(f"{item.path}\x00{item.size}\x00{item.sha256}\n".encode())
    return whole.hexdigest()


def _text(raw: bytes) -> str | None:
    if len(raw) > MAX_TEXT_BYTES:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\x00" in text:
        return None
    return text.replace("\r\n", "\n")


def _read(path: Path, shown: str, budget: int) -> tuple[PinnedFile, int]:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise ManifestError(f"{shown}: cannot be read ({exc.strerror or 'I/O error'})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ManifestError(f"{shown}: is not a regular file")
        if info.st_size > budget:
            raise ManifestError(f"{shown}: the folder holds more than {MAX_TOTAL_BYTES:,} bytes")
        chunks: list[bytes] = []
        left = budget + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1024 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise ManifestError(f"{shown}: cannot be read ({exc.strerror or 'I/O error'})") from None
    finally:
        os.close(fd)
    raw = b"".join(chunks)
    if len(raw) > budget:
        raise ManifestError(f"{shown}: the folder holds more than {MAX_TOTAL_BYTES:,} bytes")
    pinned = PinnedFile(shown, hashlib.sha256(raw).hexdigest(), len(raw), _text(raw))
    return pinned, len(raw)


def _inside(real: Path, folder: Path, shown: str) -> None:
    if not real.is_relative_to(folder):
        raise ManifestError(f"{shown}: links outside the skill folder (to {real})")


def folder_manifest(folder: Path) -> Manifest:
    """The manifest of the skill folder ``folder`` (its real path). Raises
    :class:`ManifestError` for a link out of it, an unreadable entry or a bound passed."""
    files: list[PinnedFile] = []
    budget = MAX_TOTAL_BYTES
    pending: list[tuple[Path, int]] = [(folder, 0)]
    visited: set[Path] = set()
    while pending:
        current, depth = pending.pop()
        real_current = Path(os.path.realpath(current))
        if real_current in visited:
            continue  # a link back to a folder already read
        visited.add(real_current)
        try:
            with os.scandir(current) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except OSError as exc:
            shown = current.relative_to(folder).as_posix()
            raise ManifestError(
                f"{shown}: cannot be listed ({exc.strerror or 'I/O error'})"
            ) from None
        for entry in entries:
            path = Path(entry.path)
            shown = path.relative_to(folder).as_posix()
            real = Path(os.path.realpath(path))
            _inside(real, folder, shown)
            if real.is_dir():
                if depth + 1 > MAX_DEPTH:
                    raise ManifestError(f"{shown}: deeper than {MAX_DEPTH} folders")
                pending.append((path, depth + 1))
                continue
            if len(files) >= MAX_FILES:
                raise ManifestError(f"the skill folder holds more than {MAX_FILES} files")
            pinned, used = _read(real, shown, budget)
            budget -= used
            files.append(pinned)
    return Manifest(tuple(sorted(files, key=lambda f: f.path)))


def file_manifest(path: Path) -> Manifest:
    """The manifest of a single-file skill: that file, under its own name."""
    pinned, _ = _read(Path(os.path.realpath(path)), path.name, MAX_TOTAL_BYTES)
    return Manifest((pinned,))
