"""The usage ledger: tokens and estimated cost per principal per day, and each session's
tokens by the model that spent them (its cost is estimated from those when read).

A day is a calendar date string (``2026-12-01``) in the time zone the limits use; the
ledger only adds and reads, it never decides what a day is.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import aiosqlite

from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.pricing import ModelUsages
from thalos_bot.storage.database import Database, fetch_all, fetch_one
from thalos_bot.storage.migrations import Migration
from thalos_bot.storage.protocol import Spend
from thalos_bot.storage.usage_breakdown import (
    ADD_SQL,
    AGENT_SQL,
    Dimension,
    by_sql,
    rows_of,
)
from thalos_bot.storage.usage_breakdown import SQLITE_MIGRATION as BREAKDOWN_MIGRATION

ALERTS_MIGRATION = Migration(
    "0612_usage_alerts",
    """
    CREATE TABLE usage_alerts (
        principal  TEXT NOT NULL,
        day        TEXT NOT NULL,
        level      INTEGER NOT NULL,
        PRIMARY KEY (principal, day, level)
    );
    """,
)
"""Which alerts a principal was told, once each a day (the same on PostgreSQL)."""
LIFTED = 0
"""The "level" of an admin's lift of a person's daily limits for one day."""
ALERTED_SQL = "SELECT 1 AS one FROM usage_alerts WHERE principal = %s AND day = %s AND level = %s"
ALERT_SQL = (
    "INSERT INTO usage_alerts (principal, day, level) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"
)

USAGE_MIGRATIONS: list[Migration] = [
    Migration(
        "0610_usage_daily",
        """
        CREATE TABLE usage_daily (
            principal          TEXT NOT NULL,
            day                TEXT NOT NULL,
            input_tokens       INTEGER NOT NULL DEFAULT 0,
            output_tokens      INTEGER NOT NULL DEFAULT 0,
            cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
            cache_write_tokens INTEGER NOT NULL DEFAULT 0,
            cost_usd           REAL NOT NULL DEFAULT 0,
            turns              INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (principal, day)
        ) WITHOUT ROWID;
        """,
    ),
    Migration(
        "0611_usage_session_models",
        """
        CREATE TABLE usage_session_models (
            session_id         TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
            model              TEXT NOT NULL,
            input_tokens       INTEGER NOT NULL DEFAULT 0,
            output_tokens      INTEGER NOT NULL DEFAULT 0,
            cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
            cache_write_tokens INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (session_id, model)
        ) WITHOUT ROWID;
        """,
    ),
    ALERTS_MIGRATION,
    BREAKDOWN_MIGRATION,
]


@dataclass(frozen=True, slots=True)
class DayUsage:
    usage: TokenUsage = TokenUsage()
    cost_usd: float = 0.0
    turns: int = 0


class UsageLedger(Protocol):
    async def add(self, principal: str, day: str, usage: TokenUsage, cost_usd: float) -> None:
        """Add one turn's usage to the principal's day."""
        ...

    async def record(self, spend: Spend) -> None:
        """Add ``spend`` on its own (a turn not stored): the principal's day, and its
        breakdown by agent and model."""
        ...

    async def day(self, principal: str, day: str) -> DayUsage:
        """What the principal spent that day (zero when nothing was recorded)."""
        ...

    async def session_models(self, session: str) -> ModelUsages:
        """The session's stored tokens by model (those stored with a :class:`Spend`)."""
        ...

    async def first_alert(self, principal: str, day: str, level: int) -> bool:
        """Record that the principal was told they reached ``level`` % of a limit in a
        period (``day``: a day, or a month such as ``2026-12``); True only the first time
        (across replicas). :data:`LIFTED` records an admin's lift of the principal's
        limits for that day."""
        ...

    async def alerted(self, principal: str, day: str, level: int) -> bool:
        """Was ``level`` recorded for the principal that day?"""
        ...

    async def days(
        self, first: str, last: str, principal: str | None = None
    ) -> dict[str, DayUsage]:
        """Spending per day from ``first`` to ``last`` (inclusive), everyone's or the
        principal's."""
        ...

    async def agent_span(self, agent: str, first: str, last: str) -> DayUsage:
        """An agent's spending over everyone from ``first`` to ``last`` (inclusive)."""
        ...


class MemoryUsageLedger:
    """The ledger in a dict, for tests and the in-memory store."""

    def __init__(self) -> None:
        self.days_held: dict[tuple[str, str], DayUsage] = {}
        self.sessions: dict[str, ModelUsages] = {}
        self.alerts: set[tuple[str, str, int]] = set()
        self.parts: dict[tuple[str, str, str, str], DayUsage] = {}
        """(principal, agent, model, day) -> spending (the breakdown)."""

    async def first_alert(self, principal: str, day: str, level: int) -> bool:
        key = (principal, day, level)
        first = key not in self.alerts
        self.alerts.add(key)
        return first

    async def alerted(self, principal: str, day: str, level: int) -> bool:
        return (principal, day, level) in self.alerts

    async def add(self, principal: str, day: str, usage: TokenUsage, cost_usd: float) -> None:
        self.take(Spend(principal, day, usage, cost_usd))

    async def record(self, spend: Spend) -> None:
        self.take(spend)

    def take(self, spend: Spend) -> None:
        """Add ``spend`` at once (the in-memory session store does, with its turn)."""
        key = (spend.principal, spend.day)
        held = self.days_held.get(key, DayUsage())
        self.days_held[key] = DayUsage(
            held.usage + spend.usage, held.cost_usd + spend.cost_usd, held.turns + 1
        )
        if spend.session:
            self.sessions[spend.session] = (
                self.sessions.get(spend.session, ModelUsages()) + spend.models
            )
        for model, usage, cost in spend.breakdown if spend.agent else ():
            part = (spend.principal, spend.agent, model, spend.day)
            self.parts[part] = add_days(self.parts.get(part, DayUsage()), DayUsage(usage, cost, 1))

    async def agent_span(self, agent: str, first: str, last: str) -> DayUsage:
        spent = DayUsage()
        for (_, whose, _, day), part in self.parts.items():
            if whose == agent and first <= day <= last:
                spent = add_days(spent, part)
        return spent

    async def day(self, principal: str, day: str) -> DayUsage:
        return self.days_held.get((principal, day), DayUsage())

    async def session_models(self, session: str) -> ModelUsages:
        return self.sessions.get(session, ModelUsages())

    async def days(
        self, first: str, last: str, principal: str | None = None
    ) -> dict[str, DayUsage]:
        totals: dict[str, DayUsage] = {}
        for (whose, day), spent in self.days_held.items():
            if first <= day <= last and principal in (None, whose):
                totals[day] = add_days(totals.get(day, DayUsage()), spent)
        return dict(sorted(totals.items()))


class SqliteUsageLedger:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def first_alert(self, principal: str, day: str, level: int) -> bool:
        async with self._db.transaction() as conn:
            cursor = await conn.execute(ALERT_SQL.replace("%s", "?"), (principal, day, level))
            return cursor.rowcount == 1

    async def alerted(self, principal: str, day: str, level: int) -> bool:
        async with self._db.read() as conn:
            row = await fetch_one(conn, ALERTED_SQL.replace("%s", "?"), (principal, day, level))
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
                "SELECT input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, "
                "cost_usd, turns FROM usage_daily WHERE principal = ? AND day = ?",
                (principal, day),
            )
        return day_of(row)

    async def session_models(self, session: str) -> ModelUsages:
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT model, input_tokens, output_tokens, cache_read_tokens, "
                "cache_write_tokens FROM usage_session_models WHERE session_id = ? "
                "ORDER BY model",
                (session,),
            )
        return models_of(rows)

    async def people(self, first: str, last: str) -> dict[str, DayUsage]:
        """Each principal's spending from ``first`` to ``last`` (inclusive)."""
        async with self._db.read() as conn:
            rows = await fetch_all(conn, PEOPLE_SQL.replace("%s", "?"), (first, last))
        return {str(row["principal"]): day_of(row) for row in rows}

    async def days(
        self, first: str, last: str, principal: str | None = None
    ) -> dict[str, DayUsage]:
        """Every principal's spending (or ``principal``'s) added up per day, for the
        days from ``first`` to ``last`` (inclusive) that have any, in date order (the
        dashboard's plot)."""
        sql, values = days_query(first, last, principal)
        async with self._db.read() as conn:
            rows = await fetch_all(conn, sql.replace("%s", "?"), values)
        return {str(row["day"]): day_of(row) for row in rows}

    async def agent_span(self, agent: str, first: str, last: str) -> DayUsage:
        async with self._db.read() as conn:
            row = await fetch_one(conn, AGENT_SQL.replace("%s", "?"), (agent, first, last))
        return sums_of(row)

    async def by(self, dimension: Dimension, first: str, last: str) -> dict[str, DayUsage]:
        """Spending per principal, agent or model from ``first`` to ``last``."""
        async with self._db.read() as conn:
            rows = await fetch_all(conn, by_sql(dimension).replace("%s", "?"), (first, last))
        return {str(row["name"]): day_of(row) for row in rows}


DAYS_SQL = (
    "SELECT day, SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens,"
    " SUM(cache_read_tokens) AS cache_read_tokens,"
    " SUM(cache_write_tokens) AS cache_write_tokens, SUM(cost_usd) AS cost_usd,"
    " SUM(turns) AS turns FROM usage_daily WHERE day >= %s AND day <= %s{whose}"
    " GROUP BY day ORDER BY day"
)
"""Both ledgers' per-day totals over every principal (PostgreSQL's placeholders)."""


PEOPLE_SQL = (
    "SELECT principal, SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens,"
    " SUM(cache_read_tokens) AS cache_read_tokens,"
    " SUM(cache_write_tokens) AS cache_write_tokens, SUM(cost_usd) AS cost_usd,"
    " SUM(turns) AS turns FROM usage_daily WHERE day >= %s AND day <= %s"
    " GROUP BY principal ORDER BY principal"
)
"""Both ledgers' totals per principal over a range of days (``thalos-bot spend``)."""


def days_query(first: str, last: str, principal: str | None) -> tuple[str, tuple[str, ...]]:
    """:data:`DAYS_SQL` over everyone, or one principal, and its values."""
    if principal is None:
        return DAYS_SQL.format(whose=""), (first, last)
    return DAYS_SQL.format(whose=" AND principal = %s"), (first, last, principal)


def add_days(one: DayUsage, other: DayUsage) -> DayUsage:
    return DayUsage(one.usage + other.usage, one.cost_usd + other.cost_usd, one.turns + other.turns)


class Row(Protocol):
    """A result row read by column name (sqlite3.Row, psycopg's DictRow)."""

    def __getitem__(self, key: str, /) -> Any: ...


def tokens_of(row: Row) -> TokenUsage:
    """The four token counts of a ledger row."""
    return TokenUsage(
        int(row["input_tokens"]),
        int(row["output_tokens"]),
        int(row["cache_read_tokens"]),
        int(row["cache_write_tokens"]),
    )


def sums_of(row: Row | None) -> DayUsage:
    """A row of ``SUM`` s (all NULL when nothing matched)."""
    if row is None or row["turns"] is None:
        return DayUsage()
    return day_of(row)


def day_of(row: Row | None) -> DayUsage:
    """A ``usage_daily`` row (None: nothing spent that day)."""
    if row is None:
        return DayUsage()
    return DayUsage(tokens_of(row), float(row["cost_usd"]), int(row["turns"]))


def models_of(rows: Iterable[Row]) -> ModelUsages:
    """``usage_session_models`` rows as one session's tokens by model."""
    usages = ModelUsages()
    for row in rows:
        usages = usages.add(str(row["model"]), tokens_of(row))
    return usages


async def add_spend(conn: aiosqlite.Connection, spend: Spend) -> None:
    """Add ``spend`` to its principal's day (and its session's tokens by model), in the
    caller's transaction."""
    usage = spend.usage
    await conn.execute(
        """
        INSERT INTO usage_daily (principal, day, input_tokens, output_tokens,
            cache_read_tokens, cache_write_tokens, cost_usd, turns)
        VALUES (?, ?, ?, ?, ?, ?, ?, 1)
        ON CONFLICT (principal, day) DO UPDATE SET
            input_tokens = input_tokens + excluded.input_tokens,
            output_tokens = output_tokens + excluded.output_tokens,
            cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
            cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
            cost_usd = cost_usd + excluded.cost_usd,
            turns = turns + 1
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
                INSERT INTO usage_session_models (session_id, model, input_tokens,
                    output_tokens, cache_read_tokens, cache_write_tokens)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (session_id, model) DO UPDATE SET
                    input_tokens = input_tokens + excluded.input_tokens,
                    output_tokens = output_tokens + excluded.output_tokens,
                    cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
                    cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens
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
        await conn.execute(ADD_SQL.replace("%s", "?"), values)
