"""Hook deliveries on PostgreSQL: the interface of :class:`~thalos_bot.hooks.store.
SqliteHookStore`, the same statements; claims take rows ``FOR UPDATE SKIP LOCKED``, so
replicas claiming at once each take different rows, and a delivery let in by one
replica is a duplicate for all of them (the unique key holds across replicas)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from thalos_bot.hooks.store import (
    BODY_KEY,
    INSERT,
    OPEN,
    RETIRE,
    SEEN,
    TAKE,
    HookDelivery,
    NewDelivery,
    ResultKind,
    delivery_of,
    insert_values,
    taken,
)
from thalos_bot.storage.database import as_utc
from thalos_bot.storage.pg.database import PgDatabase, fetch_all, fetch_one


def _pg(sql: str) -> str:
    return sql.replace("?", "%s")


class PgHookStore:
    def __init__(self, database: PgDatabase) -> None:
        self._db = database

    async def receive(self, new: NewDelivery, now: datetime, window: float) -> bool:
        async with self._db.transaction() as conn:
            # A racing replica's insert of the same key waits on the unique index and
            # then finds the row: ON CONFLICT makes it the duplicate, not an error.
            seen = await fetch_one(conn, _pg(SEEN) + " FOR UPDATE", (new.hook, new.dedupe_key))
            if seen is not None:
                age = now - seen["received_at"]
                if not new.dedupe_key.startswith(BODY_KEY) or age <= timedelta(seconds=window):
                    return False
                await conn.execute(_pg(RETIRE), (seen["id"],))
            cursor = await conn.execute(
                _pg(INSERT) + " ON CONFLICT (hook, dedupe_key) DO NOTHING",
                insert_values(new, as_utc(now)),
            )
            return cursor.rowcount == 1

    async def claim(
        self, now: datetime, replica: str, span: float, *, everyone: bool = False
    ) -> list[HookDelivery]:
        until = as_utc(now + timedelta(seconds=span))
        claimed: list[HookDelivery] = []
        async with self._db.transaction() as conn:
            rows = await fetch_all(
                conn, _pg(OPEN) + " FOR UPDATE SKIP LOCKED", (everyone, as_utc(now))
            )
            for row in rows:
                delivery = delivery_of(_plain(row))
                state, attempts = taken(delivery)
                await conn.execute(_pg(TAKE), (state, attempts, replica, until, delivery.id))
                claimed.append(replace(delivery, state=state, attempts=attempts))
        return claimed

    async def finish(self, delivery_id: str, result: str, kind: ResultKind, at: datetime) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE hook_deliveries SET state = 'finished', result = %s, result_kind = %s,"
                " finished_at = %s WHERE id = %s",
                (result, kind, as_utc(at), delivery_id),
            )

    async def done(self, delivery_id: str, at: datetime) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE hook_deliveries SET state = 'done', claimed_until = NULL,"
                " finished_at = coalesce(finished_at, %s) WHERE id = %s",
                (as_utc(at), delivery_id),
            )

    async def get(self, delivery_id: str) -> HookDelivery | None:
        async with self._db.read() as conn:
            row = await fetch_one(
                conn, "SELECT * FROM hook_deliveries WHERE id = %s", (delivery_id,)
            )
        return None if row is None else delivery_of(_plain(row))


def _plain(row: Any) -> dict[str, object]:
    return dict(row)
