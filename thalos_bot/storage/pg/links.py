"""The linked identities on PostgreSQL (see :mod:`thalos_bot.storage.links`), shared by
the replicas: a code issued on one is used on another."""

from __future__ import annotations

from thalos_bot.storage.links import LINK_TABLES, SqlitePeopleLinks
from thalos_bot.storage.migrations import Migration
from thalos_bot.storage.pg.dialect import PgDialect

PG_LINK_MIGRATIONS: list[Migration] = [
    Migration("0710_person_links", LINK_TABLES.format(time="TIMESTAMPTZ")),
]


class PgPeopleLinks(PgDialect, SqlitePeopleLinks):
    """The same statements, in PostgreSQL's dialect."""
