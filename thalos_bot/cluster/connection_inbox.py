"""Receiving apart from running, for the channels that hold one platform connection.

What the connection's owner receives is first stored in the shared inbox (the
``connection_seen`` rows, keyed by channel, conversation and the platform's own id of
the message: Discord's message id, Slack's message ``ts``, Matrix's event id), with
``ON CONFLICT DO NOTHING``: a redelivery (Discord's RESUME replay, Slack's envelope sent
again, a catch-up reading the history) finds its row and runs nothing. Then a row is
*taken* under the connection lease's fencing token and handed to the pump, and it is
*done* (its payload dropped):

- inside the commit of the turn that answers it (:meth:`ConnectionInbox.admit`, called
  by the session store's fence in the same transaction as the history and the outbox
  row): a turn that was kept and a row still waiting never coexist;
- or once the pump has dealt with it otherwise (a command, a busy notice, a failure).

A row still waiting when its owner dies (received but never taken, or taken by an owner
whose turn never committed) is taken by the next owner and runs then, once: nothing
received is lost, and nothing whose answer was kept runs again. A stale owner (its
token gone) can neither take a row nor commit a turn of this channel.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, Literal

import structlog

from thalos_bot.cluster.connections import ConnectionLease
from thalos_bot.cluster.taken_rows import TakenRows
from thalos_bot.storage.pg.database import Connection, PgDatabase, fetch_all, fetch_one

log = structlog.get_logger(__name__)

RUN_WITHIN = timedelta(hours=48)
"""A row waiting longer than this is not run any more (nobody expects that answer)."""


@dataclass(frozen=True, slots=True)
class Waiting:
    seq: int
    conversation_id: str
    payload: Mapping[str, Any]
    retaken: bool
    """An earlier owner took it and its turn was never kept (it died or stalled)."""
    token: int | None = None
    """The connection token this replica took it under (None: not taken here)."""


class ConnectionInbox:
    """One channel's inbox, as the holder of its connection lease uses it."""

    def __init__(self, db: PgDatabase, lease: ConnectionLease) -> None:
        self._db = db
        self.lease = lease
        self.channel_id = lease.channel_id
        self._taken = TakenRows(
            db, self.channel_id, lambda conn, _, token: self._holds(conn, token)
        )

    async def put(self, conversation_id: str, ref: str, payload: Mapping[str, Any]) -> bool:
        """Store a received message, waiting; False when it was received before (under
        any owner: then it is not run again)."""
        stored = await self.put_taken(conversation_id, ref, payload, take=False)
        return stored != "seen"

    async def put_taken(
        self, conversation_id: str, ref: str, payload: Mapping[str, Any], *, take: bool = True
    ) -> Waiting | Literal["seen", "waiting"]:
        """Store a received message already taken under this owner's token, in one
        commit, for the owner to hand on itself (no drain between the connection and the
        pump): the row taken; ``"seen"`` when it was received before; ``"waiting"`` when
        it was stored but the lease no longer holds by the server's clock (the next owner
        runs it), as always without ``take``. The lease row is read ``FOR SHARE``, as in
        :meth:`take`."""
        token = self.lease.token if take else None
        async with self._db.transaction() as conn:
            row = await fetch_one(
                conn,
                "INSERT INTO connection_seen"
                " (channel_id, conversation_id, ref, payload, taken_token)"
                " VALUES (%s, %s, %s, %s, (SELECT token FROM connection_leases"
                " WHERE channel_id = %s AND holder = %s AND token = %s AND expires_at > now()"
                # Not taken past an older message of the conversation still waiting
                # (the drain hands that on first, then this one: their order holds).
                " AND NOT EXISTS (SELECT 1 FROM connection_seen AS older"
                " WHERE older.channel_id = %s AND older.conversation_id = %s"
                " AND older.payload IS NOT NULL AND older.taken_token IS DISTINCT FROM %s"
                " AND older.seen_at > now() - %s)"
                " FOR SHARE)) ON CONFLICT DO NOTHING RETURNING seq, taken_token",
                (
                    self.channel_id,
                    conversation_id,
                    ref,
                    json.dumps(dict(payload)),
                    self.channel_id,
                    self.lease.replica,
                    token,
                    self.channel_id,
                    conversation_id,
                    token,
                    RUN_WITHIN,
                ),
            )
        if row is None:
            return "seen"
        if row["taken_token"] is None or token is None:
            return "waiting"
        seq = int(row["seq"])
        self._taken.add(conversation_id, seq, token)
        return Waiting(seq, conversation_id, payload, retaken=False, token=token)

    async def waiting(self) -> list[Waiting]:
        """Rows not done and not taken under this owner's token, in arrival order."""
        token = self.lease.token
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT seq, conversation_id, payload, taken_token FROM connection_seen"
                " WHERE channel_id = %s AND payload IS NOT NULL"
                " AND taken_token IS DISTINCT FROM %s AND seen_at > now() - %s ORDER BY seq",
                (self.channel_id, token, RUN_WITHIN),
            )
        return [
            Waiting(
                int(r["seq"]), str(r["conversation_id"]), r["payload"], r["taken_token"] is not None
            )
            for r in rows
        ]

    async def take(self, row: Waiting) -> Waiting | None:
        """Mark ``row`` taken under this owner's token, only while the lease holds (by
        the server's clock) and the row is still waiting; the row as taken (its token
        said), or None."""
        token = self.lease.token
        if token is None:
            return None
        async with self._db.transaction() as conn:
            if not await self._holds(conn, token):
                return None
            cursor = await conn.execute(
                "UPDATE connection_seen SET taken_token = %s"
                " WHERE channel_id = %s AND seq = %s AND payload IS NOT NULL"
                " AND taken_token IS DISTINCT FROM %s",
                (token, self.channel_id, row.seq, token),
            )
        if cursor.rowcount != 1:
            return None
        self._taken.add(row.conversation_id, row.seq, token)
        return replace(row, token=token)

    async def done(self, conversation_id: str, seq: int, token: int | None) -> None:
        """The pump dealt with row ``seq`` taken under ``token`` (see
        :meth:`~thalos_bot.cluster.taken_rows.TakenRows.done`)."""
        await self._taken.done(conversation_id, seq, token)

    async def admit(self, conn: Connection, conversation_id: str) -> bool:
        """Inside the commit of a turn of ``conversation_id``: kept only while the
        connection lease's token its row was taken under still holds (see
        :meth:`~thalos_bot.cluster.taken_rows.TakenRows.admit`)."""
        return await self._taken.admit(conn, conversation_id)

    async def _holds(self, conn: Connection, token: int) -> bool:
        row = await fetch_one(
            conn,
            "SELECT 1 AS held FROM connection_leases WHERE channel_id = %s AND holder = %s"
            " AND token = %s AND expires_at > now() FOR SHARE",
            (self.channel_id, self.lease.replica, token),
        )
        return row is not None
