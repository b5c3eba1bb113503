"""The channel's small files in the state folder, private (0600): the sync position, the
rooms known to be encrypted, and (after a password login) the device's access token.

On replicas the sync position (with what it learned of the rooms) is also kept in the
shared store beside the connection's lease (the kit's
:class:`~thalos_bot.channels.kept.KeptState`): the replica that takes the sync loop over
goes on from where the last owner was, not from its own old file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import anyio
import structlog

from thalos_bot.channels.connection_state import ConnectionState
from thalos_bot.channels.kept import KeptState, read_json

log = structlog.get_logger(__name__)


def folder(state_dir: Path) -> Path:
    return state_dir / "matrix"


def _safe(user_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in user_id.lstrip("@"))


@dataclass
class SyncState:
    """Where ``/sync`` goes on from, and what the channel must remember about rooms."""

    kept: KeptState
    next_batch: str | None = None
    encrypted: set[str] = field(default_factory=set)
    """Rooms whose state says ``m.room.encryption``."""
    told: set[str] = field(default_factory=set)
    """Encrypted rooms already told that the bot cannot answer there."""
    taken: set[str] = field(default_factory=set)
    """The events of the batch after ``next_batch`` the pump already took: a
    start after a stop or a kill mid-batch gets that batch again, and skips them."""

    @classmethod
    async def opened(
        cls, state_dir: Path, user_id: str, shared: ConnectionState | None = None
    ) -> SyncState:
        """The state the connection's last owner kept in ``shared``, else (nothing kept
        there, or another account's) this state folder's."""
        kept = KeptState(folder(state_dir) / f"sync-{_safe(user_id)}.json", shared)
        data = await kept.load()
        if shared is not None and data.get("user_id") != user_id:
            data = await anyio.to_thread.run_sync(read_json, kept.path)
        token = data.get("next_batch")
        return cls(
            kept,
            token if isinstance(token, str) and data.get("user_id") == user_id else None,
            {r for r in data.get("encrypted", []) if isinstance(r, str)},
            {r for r in data.get("told", []) if isinstance(r, str)},
            {e for e in data.get("taken", []) if isinstance(e, str)},
        )

    async def save(self, user_id: str) -> None:
        data = {
            "user_id": user_id,
            "next_batch": self.next_batch,
            "encrypted": sorted(self.encrypted),
            "told": sorted(self.told),
            "taken": sorted(self.taken),
        }
        if not await self.kept.save(data):
            log.warning("matrix_sync_state_fenced")  # another replica owns the sync now


def device_path(state_dir: Path, user_id: str) -> Path:
    return folder(state_dir) / f"device-{_safe(user_id)}.json"
