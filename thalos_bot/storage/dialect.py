"""One store's statements on both databases: written once with SQLite's ``?``
placeholders and its text timestamps; the PostgreSQL form of a store is the same class
with :class:`~thalos_bot.storage.pg.dialect.PgDialect` mixed in first (``%s``,
``TIMESTAMPTZ``, psycopg's rows)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from thalos_bot.storage.database import Database, decode_time, encode_time
from thalos_bot.storage.database import fetch_all as sqlite_all
from thalos_bot.storage.database import fetch_one as sqlite_one


class SqliteDialect:
    mark = "?"

    def __init__(self, db: Database) -> None:
        self._db: Any = db

    def _sql(self, sql: str) -> str:
        return sql.replace("?", self.mark)

    def _at(self, at: datetime | None) -> object:
        """A time as the database keeps it."""
        return None if at is None else encode_time(at)

    def _time(self, raw: object) -> datetime | None:
        """A kept time back."""
        return None if raw is None else decode_time(str(raw))

    async def _one(self, conn: Any, sql: str, values: tuple[object, ...]) -> Any:
        return await sqlite_one(conn, self._sql(sql), values)

    async def _all(self, conn: Any, sql: str, values: tuple[object, ...]) -> list[Any]:
        return list(await sqlite_all(conn, self._sql(sql), values))
