"""Spending broken down: tokens and estimated cost per principal, agent, model and day.

Written with each turn beside the principal's day (:mod:`thalos_bot.storage.usage`), in
the same transaction, one row per model the turn used. It answers what the per-day
table cannot: an agent's spending across everyone (its own limits), and the
``thalos-bot spend`` report by agent and by model. The SQL is the same on SQLite and
PostgreSQL (PostgreSQL's placeholders; SQLite's are swapped in by the caller).
"""

from __future__ import annotations

from typing import Literal

from thalos_bot.storage.migrations import Migration
from thalos_bot.storage.protocol import Spend

Dimension = Literal["principal", "agent", "model"]

_TABLE = """
    CREATE TABLE usage_breakdown (
        principal          TEXT NOT NULL,
        agent              TEXT NOT NULL,
        model              TEXT NOT NULL,
        day                TEXT NOT NULL,
        input_tokens       {int} NOT NULL DEFAULT 0,
        output_tokens      {int} NOT NULL DEFAULT 0,
        cache_read_tokens  {int} NOT NULL DEFAULT 0,
        cache_write_tokens {int} NOT NULL DEFAULT 0,
        cost_usd           {real} NOT NULL DEFAULT 0,
        turns              {int} NOT NULL DEFAULT 0,
        PRIMARY KEY (principal, agent, model, day)
    );
    CREATE INDEX usage_breakdown_agent_day ON usage_breakdown (agent, day);
"""
SQLITE_MIGRATION = Migration("0613_usage_breakdown", _TABLE.format(int="INTEGER", real="REAL"))
PG_MIGRATION = Migration(
    "0613_usage_breakdown", _TABLE.format(int="BIGINT", real="DOUBLE PRECISION")
)

ADD_SQL = """
    INSERT INTO usage_breakdown AS u (principal, agent, model, day, input_tokens,
        output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, turns)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, 1)
    ON CONFLICT (principal, agent, model, day) DO UPDATE SET
        input_tokens = u.input_tokens + excluded.input_tokens,
        output_tokens = u.output_tokens + excluded.output_tokens,
        cache_read_tokens = u.cache_read_tokens + excluded.cache_read_tokens,
        cache_write_tokens = u.cache_write_tokens + excluded.cache_write_tokens,
        cost_usd = u.cost_usd + excluded.cost_usd,
        turns = u.turns + 1
"""

_SUMS = (
    "SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens,"
    " SUM(cache_read_tokens) AS cache_read_tokens,"
    " SUM(cache_write_tokens) AS cache_write_tokens, SUM(cost_usd) AS cost_usd,"
    " SUM(turns) AS turns"
)
AGENT_SQL = (
    f"SELECT {_SUMS} FROM usage_breakdown"  # noqa: S608 - constant columns
    " WHERE agent = %s AND day >= %s AND day <= %s"
)
"""One agent's spending over a range of days (its limits)."""
_BY = {
    dimension: (
        f"SELECT {dimension} AS name, {_SUMS} FROM usage_breakdown"  # noqa: S608 - constant
        f" WHERE day >= %s AND day <= %s GROUP BY {dimension} ORDER BY {dimension}"
    )
    for dimension in ("principal", "agent", "model")
}


def by_sql(dimension: Dimension) -> str:
    """Spending per ``dimension`` over a range of days (``thalos-bot spend --by``)."""
    return _BY[dimension]


def rows_of(spend: Spend) -> list[tuple[object, ...]]:
    """The :data:`ADD_SQL` values of ``spend``: one per model it used (none for a spend
    with no agent, e.g. one recorded before agents were kept)."""
    if not spend.agent:
        return []
    return [
        (
            spend.principal,
            spend.agent,
            model,
            spend.day,
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            cost,
        )
        for model, usage, cost in spend.breakdown
    ]
