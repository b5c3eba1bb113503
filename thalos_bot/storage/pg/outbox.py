"""The outbox on PostgreSQL: the same rows and states as :mod:`thalos_bot.storage.outbox`.

``progress`` is ``jsonb``. Pending rows come back in the order they were written
(``created_at``, then the identity column, as SQLite's ``rowid``).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.storage.database import as_utc
from thalos_bot.storage.outbox import OutboxRow, OutboxState, Progress, kind_of
from thalos_bot.storage.pg.database import Connection, PgDatabase, fetch_all, fetch_one
from thalos_bot.storage.protocol import OutboxEntry


async def insert_row(conn: Connection, entry: OutboxEntry, at: datetime) -> None:
    """Add ``entry`` as a pending row, inside the caller's transaction."""
    stamp = as_utc(at)
    address = entry.address
    await conn.execute(
        "INSERT INTO outbox (id, channel_id, conversation_id, kind, text, created_at,"
        " updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s)",
        (
            address.key,
            address.channel_id,
            address.conversation_id,
            entry.kind,
            entry.text,
            stamp,
            stamp,
        ),
    )


class PgOutbox:
    """The outbox rows in a :class:`PgDatabase` (the interface of ``SqliteOutbox``)."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    async def add(self, entry: OutboxEntry, at: datetime) -> None:
        async with self._db.transaction() as conn:
            await insert_row(conn, entry, at)

    async def get(self, row_id: str) -> OutboxRow | None:
        async with self._db.read() as conn:
            row = await fetch_one(conn, "SELECT * FROM outbox WHERE id = %s", (row_id,))
        return None if row is None else _row(row)

    async def pending(self, channel_id: ChannelId) -> list[OutboxRow]:
        """The channel's pending rows, oldest first."""
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT * FROM outbox WHERE state = 'pending' AND channel_id = %s"
                " ORDER BY created_at, position",
                (channel_id,),
            )
        return [_row(r) for r in rows]

    async def save_progress(self, row_id: str, progress: Progress, at: datetime) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE outbox SET progress = %s, updated_at = %s"
                " WHERE id = %s AND state = 'pending'",
                (Jsonb(dict(progress)), as_utc(at), row_id),
            )

    async def finish(self, row_id: str, state: OutboxState, at: datetime) -> None:
        """Mark the row ``delivered`` or ``failed``; it is pruned after the keep time."""
        stamp = as_utc(at)
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE outbox SET state = %s, updated_at = %s, done_at = %s"
                " WHERE id = %s AND state = 'pending'",
                (state, stamp, stamp, row_id),
            )

    async def prune(self, before: datetime) -> int:
        """Delete the rows done before ``before``; return how many."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "DELETE FROM outbox WHERE state <> 'pending' AND done_at < %s",
                (as_utc(before),),
            )
            return cursor.rowcount

    async def kept(self, row_ids: Collection[str]) -> set[str]:
        """Those of ``row_ids`` still pending (their clip files are still needed)."""
        wanted = sorted(set(row_ids))
        if not wanted:
            return set()
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT id FROM outbox WHERE state = 'pending' AND id = ANY(%s)",
                (wanted,),
            )
        return {r["id"] for r in rows}


def _row(row: DictRow) -> OutboxRow:
    kind = kind_of(row["kind"])
    state = row["state"]
    if state not in ("pending", "delivered", "failed"):
        raise ValueError(f"unknown outbox state {state!r}")
    progress = row["progress"]
    return OutboxRow(
        id=row["id"],
        channel_id=ChannelId(row["channel_id"]),
        conversation_id=ConversationId(row["conversation_id"]),
        kind=kind,
        text=row["text"],
        state=state,
        created_at=as_utc(row["created_at"]),
        progress=progress if isinstance(progress, dict) else {},
    )
