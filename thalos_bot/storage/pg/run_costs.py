"""The scheduled runs' tokens on PostgreSQL (see :mod:`thalos_bot.storage.run_costs`)."""

from __future__ import annotations

from thalos_bot.storage.migrations import Migration
from thalos_bot.storage.pg.dialect import PgDialect
from thalos_bot.storage.run_costs import RUN_COST_DOLLARS, RUN_COSTS_TABLE, SqliteRunCosts

PG_RUN_COST_MIGRATIONS: list[Migration] = [
    Migration("0740_schedule_run_costs", RUN_COSTS_TABLE.format(time="TIMESTAMPTZ")),
    Migration("0741_schedule_run_dollars", RUN_COST_DOLLARS.format(real="DOUBLE PRECISION")),
]


class PgRunCosts(PgDialect, SqliteRunCosts):
    """The same statements, in PostgreSQL's dialect."""
