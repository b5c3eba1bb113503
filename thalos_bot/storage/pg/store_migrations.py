"""The PostgreSQL migrations of the stores whose statements are their SQLite twins' in
PostgreSQL's dialect (:class:`~thalos_bot.storage.pg.dialect.PgDialect`): the same
tables, with PostgreSQL's types.

They live apart from the stores so that :mod:`thalos_bot.storage.pg.schema` (and every
command that only checks the schema's history) loads no database driver.
"""

from __future__ import annotations

from thalos_bot.storage.api_keys import API_CONVERSATION_TABLE, API_KEY_TABLE
from thalos_bot.storage.links import LINK_TABLES
from thalos_bot.storage.migrations import Migration
from thalos_bot.storage.run_costs import RUN_COST_DOLLARS, RUN_COSTS_TABLE
from thalos_bot.storage.voice_modes import VOICE_TABLE

PG_LINK_MIGRATIONS: list[Migration] = [
    Migration("0710_person_links", LINK_TABLES.format(time="TIMESTAMPTZ")),
]
PG_VOICE_MIGRATIONS: list[Migration] = [Migration("0720_voice_modes", VOICE_TABLE)]
PG_API_KEY_MIGRATIONS: list[Migration] = [
    Migration("0730_api_keys", API_KEY_TABLE.format(time="TIMESTAMPTZ")),
]
PG_RUN_COST_MIGRATIONS: list[Migration] = [
    Migration("0740_schedule_run_costs", RUN_COSTS_TABLE.format(time="TIMESTAMPTZ")),
    Migration("0741_schedule_run_dollars", RUN_COST_DOLLARS.format(real="DOUBLE PRECISION")),
]
PG_API_CONVERSATION_MIGRATIONS: list[Migration] = [
    Migration("0750_api_conversations", API_CONVERSATION_TABLE.format(time="TIMESTAMPTZ")),
]
