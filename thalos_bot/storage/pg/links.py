"""The linked identities on PostgreSQL (see :mod:`thalos_bot.storage.links`), shared by
the replicas: a code issued on one is used on another."""

from __future__ import annotations

from thalos_bot.storage.links import SqlitePeopleLinks
from thalos_bot.storage.pg.dialect import PgDialect


class PgPeopleLinks(PgDialect, SqlitePeopleLinks):
    """The same statements, in PostgreSQL's dialect."""
