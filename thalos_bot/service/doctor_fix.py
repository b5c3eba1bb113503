"""``thalos-bot doctor --fix``: mend what is safe to mend, after a backup, and say what
changed.

Safe means: nothing is deleted and no setting is rewritten. A missing state folder is
made (0700); a state folder or file others may read gets its private mode back; the
secrets file beside the configuration (``thalos-bot.env``) gets 0600. Before it touches
an existing state folder it copies the database (SQLite's online backup, so a running
daemon is no obstacle) into ``<state_dir>/backups/``. Every change is listed with what
was there before, so each can be undone by hand.
"""

from __future__ import annotations

import sqlite3
import stat
from datetime import UTC, datetime
from pathlib import Path

from thalos_bot.config.loader import LoadedConfig
from thalos_bot.storage.private import DIR_MODE, FILE_MODE, ensure_private_dir

SECRETS_FILE = "thalos-bot.env"
"""The environment file ``service install`` writes beside ``bot.toml``."""
BACKUPS = "backups"
_OTHERS = 0o077


def secrets_file(loaded: LoadedConfig) -> Path | None:
    """The secrets file that goes with this configuration, if there is one."""
    candidates = [Path("/etc/thalos-bot") / SECRETS_FILE]
    if loaded.path is not None:
        candidates.insert(0, loaded.path.resolve().parent / SECRETS_FILE)
    return next((path for path in candidates if path.is_file()), None)


def _loose(path: Path) -> tuple[int, int] | None:
    """(current mode, wanted mode) when others may read or write ``path``."""
    try:
        info = path.lstat()
    except OSError:
        return None
    if stat.S_ISDIR(info.st_mode):
        wanted = DIR_MODE
    elif stat.S_ISREG(info.st_mode):
        wanted = FILE_MODE
    else:
        return None
    mode = stat.S_IMODE(info.st_mode)
    return (mode, wanted) if mode & _OTHERS else None


def _backup(database: Path, now: datetime) -> Path:
    folder = ensure_private_dir(database.parent / BACKUPS)
    target = folder / f"{database.stem}-{now:%Y%m%dT%H%M%SZ}.db"
    with (
        sqlite3.connect(f"file:{database}?mode=ro", uri=True) as source,
        sqlite3.connect(target) as copy,
    ):
        source.backup(copy)
    target.chmod(FILE_MODE)
    return target


def mend(loaded: LoadedConfig, now: datetime | None = None) -> list[str]:
    """Make the safe repairs; one line per change (empty when nothing needed one).
    Raises ``OSError`` when a repair itself fails (the caller says so)."""
    folder = loaded.state_dir
    changes: list[str] = []
    if not folder.exists():
        ensure_private_dir(folder)
        changes.append(f"created the state folder {folder} (mode 0700)")
    entries = [folder, *sorted(folder.iterdir())] if folder.is_dir() else []
    loose = [(path, modes) for path in entries if (modes := _loose(path)) is not None]
    shared = loaded.settings.storage.target.kind == "postgresql"
    if loose and not shared and loaded.database_path.is_file():
        copy = _backup(loaded.database_path, now or datetime.now(UTC))
        changes.append(f"backed up {loaded.database_path} to {copy}")
    for path, (mode, wanted) in loose:
        path.chmod(wanted)
        changes.append(f"{path}: mode {mode:04o} → {wanted:04o}")
    secrets = secrets_file(loaded)
    if secrets is not None:
        info = secrets.stat()
        mode = stat.S_IMODE(info.st_mode)
        if mode & _OTHERS:
            secrets.chmod(FILE_MODE)
            changes.append(f"{secrets}: mode {mode:04o} → {FILE_MODE:04o} (it holds secrets)")
    return changes
