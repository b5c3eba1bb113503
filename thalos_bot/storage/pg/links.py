"""The linked identities on PostgreSQL (see :mod:`thalos_bot.storage.links`), shared by
the replicas: a code issued on one is used on another. The same statements as SQLite's,
with PostgreSQL's placeholders and its own timestamps."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from thalos_bot.storage.database import as_utc
from thalos_bot.storage.links import LINK_TABLES, SqlitePeopleLinks
from thalos_bot.storage.migrations import Migration
from thalos_bot.storage.pg.database import PgDatabase, fetch_all, fetch_one

PG_LINK_MIGRATIONS: list[Migration] = [
    Migration("0710_person_links", LINK_TABLES.format(time="TIMESTAMPTZ")),
]


class PgPeopleLinks(SqlitePeopleLinks):
    mark = "%s"

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    def _at(self, at: datetime) -> object:
        return as_utc(at)

    def _time(self, raw: object) -> datetime:
        assert isinstance(raw, datetime)
        return raw

    async def _one(self, conn: Any, sql: str, values: tuple[object, ...]) -> Any:
        return await fetch_one(conn, self._sql(sql), values)

    async def _all(self, conn: Any, sql: str, values: tuple[object, ...]) -> list[Any]:
        return list(await fetch_all(conn, self._sql(sql), values))
