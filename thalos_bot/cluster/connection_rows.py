"""A connection's rows beside its lease (:class:`~thalos_bot.channels.connection_state.
ConnectionRows`), in ``connection_rows``: one row per (channel, kind, group, name).

Every write is fenced by the connection lease's token: its transaction first locks the
lease's row ``FOR SHARE`` where it still names this replica and its token, and writes
nothing when it does not. A takeover (an ``UPDATE`` of that row) therefore waits for a
write under way and is never overtaken by one: what the old owner wrote before it is
read by the new owner when it opens the channel, and whatever the old owner tries after
it (a stall past the lease, then a wake-up) is refused, so it can never put back an older
ratchet under the new owner.
"""

from __future__ import annotations

import psycopg
import structlog

from thalos_bot.cluster.connections import ConnectionLease
from thalos_bot.cluster.row_change import Row, RowChange
from thalos_bot.storage.pg.database import PgDatabase, fetch_all, fetch_one

log = structlog.get_logger(__name__)

_PUT = (
    "INSERT INTO connection_rows (channel_id, kind, grp, name, value) VALUES (%s, %s, %s, %s, %s)"
    " ON CONFLICT (channel_id, kind, grp, name) DO UPDATE SET value = excluded.value"
)


class PgConnectionRows:
    def __init__(self, db: PgDatabase, lease: ConnectionLease) -> None:
        self._db = db
        self._lease = lease

    async def load_rows(self) -> list[Row]:
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT kind, grp, name, value FROM connection_rows WHERE channel_id = %s",
                (self._lease.channel_id,),
            )
        return [(r["kind"], r["grp"], r["name"], bytes(r["value"])) for r in rows]

    async def save_rows(self, change: RowChange) -> bool:
        """Write ``change`` under the lease's token; False when the lease no longer names
        it. A store error while this replica surely holds the lease is raised (the store
        is down: the channel fails, as any channel's does); once it is no longer sure (it
        stalled past the lease, and the server ended its session after
        ``STALLED_TRANSACTION_S``), it is a refusal like a fenced one: False."""
        lease, token = self._lease, self._lease.token
        if token is None:
            return False
        try:
            return await self._write(change, lease.channel_id, token)
        except (psycopg.Error, OSError) as exc:
            if lease.fresh():
                raise
            log.warning(
                "connection_rows_not_written", channel=lease.channel_id, error=type(exc).__name__
            )
            return False

    async def _write(self, change: RowChange, channel: str, token: int) -> bool:
        lease = self._lease
        async with self._db.transaction() as conn:
            held = await fetch_one(
                conn,
                "SELECT token FROM connection_leases"
                " WHERE channel_id = %s AND holder = %s AND token = %s FOR SHARE",
                (channel, lease.replica, token),
            )
            if held is None:
                log.warning("connection_rows_fenced", channel=channel, token=token)
                return False
            if change.clear:
                await conn.execute("DELETE FROM connection_rows WHERE channel_id = %s", (channel,))
            for kind, group in change.drop:
                await conn.execute(
                    "DELETE FROM connection_rows WHERE channel_id = %s AND kind = %s AND grp = %s",
                    (channel, kind, group),
                )
            if change.put:
                async with conn.cursor() as cursor:
                    await cursor.executemany(_PUT, [(channel, *row) for row in change.put])
        return True
