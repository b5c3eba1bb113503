"""What each scheduled run spent, in tokens: the last few runs of a schedule project
what its next one will cost (see :mod:`thalos_bot.schedules.projection`)."""

from __future__ import annotations

from datetime import datetime

from thalos_bot.storage.dialect import SqliteDialect
from thalos_bot.storage.migrations import Migration

RUN_COSTS_TABLE = """
CREATE TABLE schedule_run_costs (
    schedule_id TEXT NOT NULL,
    finished_at {time} NOT NULL,
    tokens      BIGINT NOT NULL CHECK (tokens >= 0)
);
CREATE INDEX schedule_run_costs_recent ON schedule_run_costs (schedule_id, finished_at);
"""
RUN_COST_DOLLARS = """
ALTER TABLE schedule_run_costs ADD COLUMN cost_usd {real} NOT NULL DEFAULT 0;
"""
"""Each run's estimated dollars beside its tokens (a run from before counts $0)."""
RUN_COST_MIGRATIONS: list[Migration] = [
    Migration("0740_schedule_run_costs", RUN_COSTS_TABLE.format(time="TEXT")),
    Migration("0741_schedule_run_dollars", RUN_COST_DOLLARS.format(real="REAL")),
]
KEPT = 5
"""Runs remembered per schedule."""


class SqliteRunCosts(SqliteDialect):
    """The runs' tokens in the daemon's SQLite file; PostgreSQL's
    (:class:`~thalos_bot.storage.pg.run_costs.PgRunCosts`) is this in its dialect."""

    async def record(
        self, schedule_id: str, tokens: int, at: datetime, cost_usd: float = 0.0
    ) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                self._sql(
                    "INSERT INTO schedule_run_costs (schedule_id, finished_at, tokens, cost_usd)"
                    " VALUES (?, ?, ?, ?)"
                ),
                (schedule_id, self._at(at), tokens, cost_usd),
            )

    async def recent(self, schedule_id: str, count: int = KEPT) -> list[int]:
        """The tokens of the schedule's last ``count`` runs, newest first."""
        async with self._db.read() as conn:
            rows = await self._all(
                conn,
                "SELECT tokens FROM schedule_run_costs WHERE schedule_id = ?"
                " ORDER BY finished_at DESC LIMIT ?",
                (schedule_id, count),
            )
        return [int(row["tokens"]) for row in rows]

    async def by_schedule(
        self, since: datetime, until: datetime
    ) -> dict[str, tuple[int, float, int]]:
        """Each schedule's runs that finished in ``[since, until)``: (tokens, dollars, runs)."""
        async with self._db.read() as conn:
            rows = await self._all(
                conn,
                "SELECT schedule_id, SUM(tokens) AS tokens, SUM(cost_usd) AS cost_usd,"
                " COUNT(*) AS runs FROM schedule_run_costs"
                " WHERE finished_at >= ? AND finished_at < ? GROUP BY schedule_id"
                " ORDER BY schedule_id",
                (self._at(since), self._at(until)),
            )
        return {
            str(row["schedule_id"]): (int(row["tokens"]), float(row["cost_usd"]), int(row["runs"]))
            for row in rows
        }

    async def recent_costs(self, schedule_id: str, count: int = KEPT) -> list[float]:
        """The estimated dollars of the schedule's last ``count`` runs, newest first."""
        async with self._db.read() as conn:
            rows = await self._all(
                conn,
                "SELECT cost_usd FROM schedule_run_costs WHERE schedule_id = ?"
                " ORDER BY finished_at DESC LIMIT ?",
                (schedule_id, count),
            )
        return [float(row["cost_usd"]) for row in rows]

    async def spent_since(self, schedule_id: str, since: datetime) -> int:
        """The tokens of the schedule's runs that finished at ``since`` or later."""
        async with self._db.read() as conn:
            row = await self._one(
                conn,
                "SELECT SUM(tokens) AS tokens FROM schedule_run_costs"
                " WHERE schedule_id = ? AND finished_at >= ?",
                (schedule_id, self._at(since)),
            )
        return int(row["tokens"] or 0) if row is not None else 0
