"""The optional port for a channel that holds a platform connection on replicas: where
the connection is (Matrix's sync token and what it learned of its rooms), kept in the
shared store beside the connection's lease so the replica that takes the connection
over goes on from there instead of starting afresh.

A save is fenced: it is written only while this replica still holds the lease under
the token it took it with. An owner that stalled past its lease and wakes up has its
saves refused (:meth:`ConnectionState.save_state` returns False), so it can never move
the position back under the new owner. :class:`ConnectionRows` keeps many rows the same
way, each written on its own (Matrix's encryption keys), under the same fence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from thalos_bot.cluster.row_change import Row, RowChange

__all__ = ["ConnectionLostError", "ConnectionRows", "ConnectionState", "Row", "RowChange"]


class ConnectionState(Protocol):
    async def load_state(self) -> dict[str, Any] | None:
        """What the connection's last owner saved (None: nothing yet)."""
        ...

    async def save_state(self, state: Mapping[str, Any]) -> bool:
        """Keep ``state`` (JSON) for the next owner; False when this replica no longer
        holds the connection (nothing was written)."""
        ...


class ConnectionRows(Protocol):
    """Rows a connection keeps beside its lease, row by row (Matrix's encryption keys:
    each Olm and Megolm session its own row), for the replica that takes it over. The
    values are opaque: a channel seals what is secret before it hands it over."""

    async def load_rows(self) -> list[Row]:
        """Every row the connection's owners kept."""
        ...

    async def save_rows(self, change: RowChange) -> bool:
        """Write ``change``; False (nothing written) when this replica no longer holds
        the connection under the token it took it with."""
        ...


class ConnectionLostError(Exception):
    """Raised by a channel whose fenced write was refused: another replica holds the
    connection now, and this one must write (and send) nothing more on it."""
