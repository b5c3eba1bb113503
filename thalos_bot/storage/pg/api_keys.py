"""The API keys on PostgreSQL (see :mod:`thalos_bot.storage.api_keys`), shared by the
replicas: a key made on one works on every one."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from thalos_bot.storage.api_keys import API_KEY_TABLE, SqliteApiKeys
from thalos_bot.storage.database import as_utc
from thalos_bot.storage.migrations import Migration
from thalos_bot.storage.pg.database import PgDatabase, fetch_all, fetch_one

PG_API_KEY_MIGRATIONS: list[Migration] = [
    Migration("0730_api_keys", API_KEY_TABLE.format(time="TIMESTAMPTZ")),
]


class PgApiKeys(SqliteApiKeys):
    mark = "%s"

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    def _at(self, at: datetime | None) -> object:
        return None if at is None else as_utc(at)

    def _time(self, raw: object) -> datetime | None:
        assert raw is None or isinstance(raw, datetime)
        return raw

    async def _one(self, conn: Any, sql: str, values: tuple[object, ...]) -> Any:
        return await fetch_one(conn, self._sql(sql), values)

    async def _all(self, conn: Any, sql: str, values: tuple[object, ...]) -> list[Any]:
        return list(await fetch_all(conn, self._sql(sql), values))
