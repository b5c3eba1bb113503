"""The webhook inbox: every update Telegram delivered, once, keyed by (bot, update_id).

The intake writes a row with ``INSERT … ON CONFLICT DO NOTHING`` and a ``NOTIFY`` in the
same transaction (PostgreSQL sends the notification at commit, so a listener never
hears of a row it cannot read yet). A duplicate delivery, or a retry after a lost 200,
finds its row already there and changes nothing. There is no "highest update_id seen"
mark: deliveries of different chats run concurrently and arrive in any order, and one
chat's are ordered by ``update_id`` when they are taken (:meth:`Inbox.waiting`).

A row is *taken* by the holder of its lane's lease, in the same transaction that checks
the lease's fencing token (:meth:`thalos_bot.cluster.leases.LeaseBook.take`); rows are
pruned 48 hours after they arrived, taken or not (Telegram itself keeps an update no
longer than 24 hours).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from thalos_bot.storage.pg.database import PgDatabase, fetch_all

CHANNEL = "thalos_inbox"
"""The NOTIFY channel; its payload is ``<bot>:<lane>``."""
KEEP = timedelta(hours=48)


@dataclass(frozen=True, slots=True)
class InboxRow:
    update_id: int
    lane: str
    payload: Mapping[str, Any]


class Inbox:
    def __init__(self, db: PgDatabase, bot: int) -> None:
        self._db = db
        self.bot = bot

    async def put(self, update_id: int, lane: str, payload: Mapping[str, Any]) -> bool:
        """Store one delivered update and tell the replicas; True when it was new.
        Raises what psycopg raises when the database cannot be reached."""
        async with self._db.transaction() as conn:
            # One round trip: the NOTIFY runs only when the row was new.
            cursor = await conn.execute(
                "WITH new AS (INSERT INTO webhook_inbox (bot, update_id, lane, payload)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (bot, update_id) DO NOTHING"
                " RETURNING lane) SELECT pg_notify(%s, %s) FROM new",
                (self.bot, update_id, lane, json.dumps(payload), CHANNEL, f"{self.bot}:{lane}"),
            )
            return cursor.rowcount == 1

    async def waiting(self, lane: str) -> list[InboxRow]:
        """The lane's rows not taken yet, in ``update_id`` order."""
        async with self._db.transaction() as conn:
            rows = await fetch_all(
                conn,
                "SELECT update_id, lane, payload FROM webhook_inbox"
                " WHERE bot = %s AND lane = %s AND taken_at IS NULL ORDER BY update_id",
                (self.bot, lane),
            )
        return [InboxRow(int(r["update_id"]), str(r["lane"]), r["payload"]) for r in rows]

    async def lanes_waiting(self) -> list[str]:
        """Every lane with a row not taken yet (a dead holder's, after its lease)."""
        async with self._db.transaction() as conn:
            rows = await fetch_all(
                conn,
                "SELECT DISTINCT lane FROM webhook_inbox WHERE bot = %s AND taken_at IS NULL",
                (self.bot,),
            )
        return [str(r["lane"]) for r in rows]

    async def prune(self, keep: timedelta = KEEP) -> int:
        """Delete the rows older than ``keep``; return how many went."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "DELETE FROM webhook_inbox WHERE bot = %s AND received_at < now() - %s",
                (self.bot, keep),
            )
            return cursor.rowcount
