"""The optional port for a channel that holds a platform connection on replicas: where
the connection is (Matrix's sync token and what it learned of its rooms), kept in the
shared store beside the connection's lease so the replica that takes the connection
over goes on from there instead of starting afresh.

A save is fenced: it is written only while this replica still holds the lease under
the token it took it with. An owner that stalled past its lease and wakes up has its
saves refused (:meth:`ConnectionState.save_state` returns False), so it can never move
the position back under the new owner.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class ConnectionState(Protocol):
    async def load_state(self) -> dict[str, Any] | None:
        """What the connection's last owner saved (None: nothing yet)."""
        ...

    async def save_state(self, state: Mapping[str, Any]) -> bool:
        """Keep ``state`` (JSON) for the next owner; False when this replica no longer
        holds the connection (nothing was written)."""
        ...
