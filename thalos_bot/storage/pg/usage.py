"""The usage ledger on PostgreSQL (the interface of :class:`~thalos_bot.storage.usage.
SqliteUsageLedger`): one row per principal per day, added to in place."""

from __future__ import annotations

from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.pricing import ModelUsages
from thalos_bot.storage.pg.database import Connection, PgDatabase, fetch_all, fetch_one
from thalos_bot.storage.protocol import Spend
from thalos_bot.storage.usage import (
    ALERT_SQL,
    ALERTED_SQL,
    PEOPLE_SQL,
    DayUsage,
    day_of,
    days_query,
    models_of,
    sums_of,
)
from thalos_bot.storage.usage_breakdown import ADD_SQL, AGENT_SQL, Dimension, by_sql, rows_of


class PgUsageLedger:
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    async def first_alert(self, principal: str, day: str, level: int) -> bool:
        async with self._db.transaction() as conn:
            cursor = await conn.execute(ALERT_SQL, (principal, day, level))
            return cursor.rowcount == 1

    async def alerted(self, principal: str, day: str, level: int) -> bool:
        async with self._db.read() as conn:
            row = await fetch_one(conn, ALERTED_SQL, (principal, day, level))
        return row is not None

    async def add(self, principal: str, day: str, usage: TokenUsage, cost_usd: float) -> None:
        await self.record(Spend(principal, day, usage, cost_usd))

    async def record(self, spend: Spend) -> None:
        async with self._db.transaction() as conn:
            await add_spend(conn, spend)

    async def day(self, principal: str, day: str) -> DayUsage:
        async with self._db.read() as conn:
            row = await fetch_one(
                conn,
                "SELECT input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,"
                " cost_usd, turns FROM usage_daily WHERE principal = %s AND day = %s",
                (principal, day),
            )
        return day_of(row)

    async def session_models(self, session: str) -> ModelUsages:
        """The session's stored tokens by model (those stored with a :class:`Spend`)."""
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT model, input_tokens, output_tokens, cache_read_tokens,"
                " cache_write_tokens FROM usage_session_models WHERE session_id = %s"
                " ORDER BY model",
                (session,),
            )
        return models_of(rows)

    async def people(self, first: str, last: str) -> dict[str, DayUsage]:
        """Each principal's spending from ``first`` to ``last`` (inclusive)."""
        async with self._db.read() as conn:
            rows = await fetch_all(conn, PEOPLE_SQL, (first, last))
        return {str(row["principal"]): day_of(row) for row in rows}

    async def days(
        self, first: str, last: str, principal: str | None = None
    ) -> dict[str, DayUsage]:
        """Every principal's spending (or ``principal``'s) per day, ``first`` to ``last``."""
        sql, values = days_query(first, last, principal)
        async with self._db.read() as conn:
            rows = await fetch_all(conn, sql, values)
        return {str(row["day"]): day_of(row) for row in rows}

    async def agent_span(self, agent: str, first: str, last: str) -> DayUsage:
        async with self._db.read() as conn:
            row = await fetch_one(conn, AGENT_SQL, (agent, first, last))
        return sums_of(row)

    async def by(self, dimension: Dimension, first: str, last: str) -> dict[str, DayUsage]:
        """Spending per principal, agent or model from ``first`` to ``last``."""
        async with self._db.read() as conn:
            rows = await fetch_all(conn, by_sql(dimension), (first, last))
        return {str(row["name"]): day_of(row) for row in rows}


async def add_spend(conn: Connection, spend: Spend) -> None:
    """Add ``spend`` to its principal's day (and its session's tokens by model), in the
    caller's transaction."""
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
    if spend.session:
        for model, part in spend.models.parts:
            await conn.execute(
                """
                INSERT INTO usage_session_models AS m (session_id, model, input_tokens,
                    output_tokens, cache_read_tokens, cache_write_tokens)
                VALUES (%s, %s, %s, %s, %s, %s)
                ON CONFLICT (session_id, model) DO UPDATE SET
                    input_tokens = m.input_tokens + excluded.input_tokens,
                    output_tokens = m.output_tokens + excluded.output_tokens,
                    cache_read_tokens = m.cache_read_tokens + excluded.cache_read_tokens,
                    cache_write_tokens = m.cache_write_tokens + excluded.cache_write_tokens
                """,
                (
                    spend.session,
                    model,
                    part.input_tokens,
                    part.output_tokens,
                    part.cache_read_tokens,
                    part.cache_write_tokens,
                ),
            )
    for values in rows_of(spend):
        await conn.execute(ADD_SQL, values)
