"""The live replicas: each one heartbeats its row; the others read who is alive.

Used for what must be shared among replicas and cannot be split by lease: Telegram's
overall rate (about 30 messages a second per bot) is divided by the number of live
replicas (:meth:`ReplicaTable.share`), and a polling replica refuses to start beside
another live one (:meth:`ReplicaTable.others`): Telegram allows one getUpdates consumer
per token. Slack's, Discord's and Matrix's senders (:mod:`thalos_bot.service.anywhere`) divide
their platform's overall rate the same way, each channel counting its own rows
(``intake`` is ``<channel>-send``).
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta

from thalos_bot.storage.pg.database import PgDatabase, fetch_all, fetch_one


def replica_id() -> str:
    """This process's name among the replicas: host, pid and a random tail."""
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(3).hex()}"


TELEGRAM = ("webhook", "polling")
"""The intakes of Telegram's replicas (a polling one refuses to start beside them)."""


class ReplicaTable:
    def __init__(self, db: PgDatabase, replica: str, alive: float) -> None:
        self._db = db
        self.replica = replica
        self.alive = timedelta(seconds=alive)
        """A replica not heard from for this long is counted as gone."""

    async def beat(self, intake: str) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO replicas (id, intake) VALUES (%s, %s) ON CONFLICT (id)"
                " DO UPDATE SET seen_at = now(), intake = EXCLUDED.intake",
                (self.replica, intake),
            )

    async def others(self, intakes: tuple[str, ...] = TELEGRAM) -> list[str]:
        """The other live replicas taking updates by one of ``intakes``, as ``id
        (intake)`` (a connection channel's senders beat rows of their own, which do not
        take Telegram's updates)."""
        async with self._db.transaction() as conn:
            rows = await fetch_all(
                conn,
                "SELECT id, intake FROM replicas WHERE id <> %s AND seen_at > now() - %s"
                " AND intake = ANY(%s) ORDER BY id",
                (self.replica, self.alive, list(intakes)),
            )
        return [f"{r['id']} ({r['intake']})" for r in rows]

    async def share(self, total: float, intake: str | None = None) -> float:
        """This replica's part of a rate shared by all live replicas (those beating as
        ``intake``, when given: the replicas that send to that platform)."""
        async with self._db.transaction() as conn:
            row = await fetch_one(
                conn,
                "SELECT count(*) AS n FROM replicas WHERE (seen_at > now() - %s"
                " AND (%s::text IS NULL OR intake = %s)) OR id = %s",
                (self.alive, intake, intake, self.replica),
            )
        live = max(1, int(row["n"]) if row is not None else 1)
        return total / live

    async def leave(self) -> None:
        async with self._db.transaction() as conn:
            await conn.execute("DELETE FROM replicas WHERE id = %s", (self.replica,))
