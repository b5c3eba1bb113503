"""The API keys on PostgreSQL (see :mod:`thalos_bot.storage.api_keys`), shared by the
replicas: a key made on one works on every one."""

from __future__ import annotations

from thalos_bot.storage.api_keys import SqliteApiKeys
from thalos_bot.storage.pg.dialect import PgDialect


class PgApiKeys(PgDialect, SqliteApiKeys):
    """The same statements, in PostgreSQL's dialect."""
