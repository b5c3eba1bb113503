"""Each conversation's ``/voice`` choice on PostgreSQL, shared by the replicas."""

from __future__ import annotations

from typing import Any

from thalos_bot.storage.migrations import Migration
from thalos_bot.storage.pg.database import PgDatabase, fetch_one
from thalos_bot.storage.voice_modes import VOICE_TABLE, SqliteVoiceModes

PG_VOICE_MIGRATIONS: list[Migration] = [Migration("0720_voice_modes", VOICE_TABLE)]


class PgVoiceModes(SqliteVoiceModes):
    mark = "%s"

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    async def _one(self, conn: Any, sql: str, values: tuple[object, ...]) -> Any:
        return await fetch_one(conn, sql, values)
