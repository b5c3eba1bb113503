"""The usage ledger on PostgreSQL (the interface of :class:`~thalos_bot.storage.usage.
SqliteUsageLedger`): one row per principal per day, added to in place."""

from __future__ import annotations

from thalos_bot.domain.events import TokenUsage
from thalos_bot.storage.pg.database import Connection, PgDatabase, fetch_one
from thalos_bot.storage.protocol import Spend
from thalos_bot.storage.usage import DayUsage


class PgUsageLedger:
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    async def add(self, principal: str, day: str, usage: TokenUsage, cost_usd: float) -> None:
        async with self._db.transaction() as conn:
            await add_spend(conn, Spend(principal, day, usage, cost_usd))

    async def day(self, principal: str, day: str) -> DayUsage:
        async with self._db.read() as conn:
            row = await fetch_one(
                conn,
                "SELECT input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,"
                " cost_usd, turns FROM usage_daily WHERE principal = %s AND day = %s",
                (principal, day),
            )
        if row is None:
            return DayUsage()
        usage = TokenUsage(
            int(row["input_tokens"]),
            int(row["output_tokens"]),
            int(row["cache_read_tokens"]),
            int(row["cache_write_tokens"]),
        )
        return DayUsage(usage, float(row["cost_usd"]), int(row["turns"]))


async def add_spend(conn: Connection, spend: Spend) -> None:
    """Add ``spend`` to its principal's day, in the caller's transaction."""
    usage = spend.usage
    await conn.execute(
        """
        INSERT INTO usage_daily AS u (principal, day, input_tokens, output_tokens,
            cache_read_tokens, cache_write_tokens, cost_usd, turns)
        VALUES (%s, %s, %s, %s, %s, %s, %s, 1)
        ON CONFLICT (principal, day) DO UPDATE SET
            input_tokens = u.input_tokens + excluded.input_tokens,
            output_tokens = u.output_tokens + excluded.output_tokens,
            cache_read_tokens = u.cache_read_tokens + excluded.cache_read_tokens,
            cache_write_tokens = u.cache_write_tokens + excluded.cache_write_tokens,
            cost_usd = u.cost_usd + excluded.cost_usd,
            turns = u.turns + 1
        """,
        (
            spend.principal,
            spend.day,
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            spend.cost_usd,
        ),
    )
