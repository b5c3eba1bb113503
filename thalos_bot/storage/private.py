"""The state folder is private: created 0700, every file the bot creates in it 0600.

The modes are set explicitly after creating, so they hold whatever the umask. A folder
or file that already exists keeps its mode; :func:`loose_modes` reports looser ones (for
``thalos-bot doctor``). SQLite creates ``-wal`` and ``-shm`` with the mode of the
database file, so a private database keeps its sidecar files private too.

Root running a command for the service (``sudo thalos-bot web pair``) writes into a
folder the service's user owns: what it creates there is given to that user, as is a
root-owned file it finds there (an earlier version left them), so the daemon can still
read and rewrite it. (SQLite does the same for its sidecar files.)
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import TextIO

DIR_MODE = 0o700
FILE_MODE = 0o600
_OTHERS = 0o077


def _owner_for(path: Path) -> tuple[int, int] | None:
    """Who should own ``path``, made or found by root in a folder another user owns
    (None: leave it as it is)."""
    if os.geteuid() != 0:
        return None
    try:
        folder = path.parent.stat()
        found = path.lstat()
    except OSError:
        return None
    if folder.st_uid == 0 or found.st_uid != 0 or stat.S_ISLNK(found.st_mode):
        return None
    if not stat.S_ISDIR(found.st_mode) and found.st_nlink != 1:
        return None  # a hard link to a file elsewhere is never given away
    return folder.st_uid, folder.st_gid


def _give_away(path: Path) -> None:
    owner = _owner_for(path)
    if owner is not None:
        os.chown(path, *owner, follow_symlinks=False)


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) if needed; each folder made here gets 0700
    (the state folder of ``chat --offline``'s ``state/offline`` too), existing ones keep
    their mode."""
    if not path.is_dir():
        missing = [path, *(p for p in path.parents if not p.exists())]
        for folder in reversed(missing):
            with contextlib.suppress(FileExistsError):
                folder.mkdir(mode=DIR_MODE)
                folder.chmod(DIR_MODE)
    _give_away(path)
    return path


def ensure_private_file(path: Path) -> Path:
    """Create ``path`` empty with mode 0600 unless it exists (its folder made private)."""
    ensure_private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        _give_away(path)
        return path
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    _give_away(path)
    return path


def open_private_append(path: Path) -> TextIO:
    """Open ``path`` for appending text, creating it 0600 first."""
    return ensure_private_file(path).open("a", encoding="utf-8")


def loose_modes(state_dir: Path) -> list[str]:
    """The state folder and the files directly in it that others may read or write,
    each as ``"<path> is <mode>"``; empty when all is private (or nothing exists)."""
    found: list[str] = []
    try:
        entries = [state_dir, *sorted(state_dir.iterdir())]
    except OSError:
        return found
    for entry in entries:
        try:
            info = entry.lstat()
        except OSError:
            continue
        if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
            continue
        mode = stat.S_IMODE(info.st_mode)
        if mode & _OTHERS:
            wanted = DIR_MODE if stat.S_ISDIR(info.st_mode) else FILE_MODE
            found.append(f"{entry} is {mode:04o} (expected {wanted:04o})")
    return found
