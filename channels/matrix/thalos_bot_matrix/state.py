"""The channel's small files in the state folder, private (0600): the sync position, the
rooms known to be encrypted, and (after a password login) the device's access token.

Each is written whole to a temporary file, flushed, then renamed over the old one, so a
kill leaves either the old content or the new, never half of it.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio


def folder(state_dir: Path) -> Path:
    return state_dir / "matrix"


def _safe(user_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in user_id.lstrip("@"))


def write_private(path: Path, data: dict[str, Any]) -> None:
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
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@dataclass
class SyncState:
    """Where ``/sync`` goes on from, and what the channel must remember about rooms."""

    path: Path
    next_batch: str | None = None
    encrypted: set[str] = field(default_factory=set)
    """Rooms whose state says ``m.room.encryption``."""
    told: set[str] = field(default_factory=set)
    """Encrypted rooms already told that the bot cannot answer there."""

    @classmethod
    def load(cls, state_dir: Path, user_id: str) -> SyncState:
        path = folder(state_dir) / f"sync-{_safe(user_id)}.json"
        data = read_json(path)
        token = data.get("next_batch")
        return cls(
            path,
            token if isinstance(token, str) and data.get("user_id") == user_id else None,
            {r for r in data.get("encrypted", []) if isinstance(r, str)},
            {r for r in data.get("told", []) if isinstance(r, str)},
        )

    async def save(self, user_id: str) -> None:
        data = {
            "user_id": user_id,
            "next_batch": self.next_batch,
            "encrypted": sorted(self.encrypted),
            "told": sorted(self.told),
        }
        await anyio.to_thread.run_sync(write_private, self.path, data)


def device_path(state_dir: Path, user_id: str) -> Path:
    return folder(state_dir) / f"device-{_safe(user_id)}.json"
