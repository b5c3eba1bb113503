"""A channel's small JSON state that outlives its process: a private file (0600) in the
state folder and, on replicas, the shared store beside the connection's lease (the
host's :class:`~thalos_bot.channels.connection_state.ConnectionState`), so the replica
that takes the connection over goes on from what the last owner kept.

A file is written whole to a temporary file, flushed, then renamed over the old one: a
kill leaves the old content or the new, never half. Saves run one at a time, in the
order they were asked for (two at once would write the one temporary file together). A
shared save is fenced: an owner that lost the lease writes nothing, there or in its
file.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import structlog

from thalos_bot.channels.connection_state import ConnectionState

log = structlog.get_logger(__name__)


def write_private(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        path.parent.chmod(0o700)
    temporary = path.with_name(path.name + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
        handle.flush()
        os.fsync(handle.fileno())
    temporary.replace(path)


def read_json(path: Path) -> dict[str, Any]:
    """The object in ``path``; {} when it is missing, unreadable or not an object (the
    last two said in the log: what the file kept is then forgotten)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("kept_file_unreadable", path=str(path), error=type(exc).__name__)
        return {}
    if not isinstance(data, dict):
        log.warning("kept_file_unreadable", path=str(path), error="not a JSON object")
        return {}
    return data


class KeptState:
    def __init__(self, path: Path, shared: ConnectionState | None = None) -> None:
        self.path = path
        self.shared = shared
        self._saving = anyio.Lock()

    async def load(self) -> dict[str, Any]:
        """What the connection's last owner kept, else this state folder's file."""
        if self.shared is not None:
            kept = await self.shared.load_state()
            if kept is not None:
                return dict(kept)
        return await anyio.to_thread.run_sync(read_json, self.path)

    async def save(self, data: Mapping[str, Any]) -> bool:
        """False when this replica no longer holds the connection (nothing written);
        raises OSError when the file cannot be written."""
        async with self._saving:
            if self.shared is not None and not await self.shared.save_state(data):
                return False
            await anyio.to_thread.run_sync(write_private, self.path, data)
            return True
