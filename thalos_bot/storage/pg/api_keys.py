"""The API keys on PostgreSQL (see :mod:`thalos_bot.storage.api_keys`), shared by the
replicas: a key made on one works on every one."""

from __future__ import annotations

from thalos_bot.storage.api_keys import API_CONVERSATION_TABLE, API_KEY_TABLE, SqliteApiKeys
from thalos_bot.storage.migrations import Migration
from thalos_bot.storage.pg.dialect import PgDialect

PG_API_KEY_MIGRATIONS: list[Migration] = [
    Migration("0730_api_keys", API_KEY_TABLE.format(time="TIMESTAMPTZ")),
]
PG_API_CONVERSATION_MIGRATIONS: list[Migration] = [
    Migration("0750_api_conversations", API_CONVERSATION_TABLE.format(time="TIMESTAMPTZ")),
]


class PgApiKeys(PgDialect, SqliteApiKeys):
    """The same statements, in PostgreSQL's dialect."""
