"""The scheduled runs' tokens on PostgreSQL (see :mod:`thalos_bot.storage.run_costs`)."""

from __future__ import annotations

from thalos_bot.storage.pg.dialect import PgDialect
from thalos_bot.storage.run_costs import SqliteRunCosts


class PgRunCosts(PgDialect, SqliteRunCosts):
    """The same statements, in PostgreSQL's dialect."""
