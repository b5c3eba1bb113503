"""PostgreSQL's side of :mod:`thalos_bot.storage.dialect`: mixed in before a store
written for SQLite, it takes a :class:`PgDatabase` and gives the statements
PostgreSQL's placeholders, times and rows."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from thalos_bot.storage.database import as_utc
from thalos_bot.storage.pg.database import PgDatabase, fetch_all, fetch_one


class PgDialect:
    mark = "%s"

    def __init__(self, db: PgDatabase) -> None:
        self._db: Any = db

    def _at(self, at: datetime | None) -> object:
        return None if at is None else as_utc(at)

    def _time(self, raw: object) -> datetime | None:
        assert raw is None or isinstance(raw, datetime)
        return raw

    async def _one(self, conn: Any, sql: str, values: tuple[object, ...]) -> Any:
        return await fetch_one(conn, sql.replace("?", self.mark), values)

    async def _all(self, conn: Any, sql: str, values: tuple[object, ...]) -> list[Any]:
        return list(await fetch_all(conn, sql.replace("?", self.mark), values))
