"""Each conversation's ``/voice`` choice (``on``, ``off``, ``auto``), kept across
restarts; a conversation with none follows ``[speech] mode``."""

from __future__ import annotations

from typing import Any

from thalos_bot.storage.database import Database, fetch_one
from thalos_bot.storage.migrations import Migration

VOICE_TABLE = """
CREATE TABLE voice_modes (
    channel_id      TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    mode            TEXT NOT NULL CHECK (mode IN ('on', 'off', 'auto')),
    PRIMARY KEY (channel_id, conversation_id)
);
"""
VOICE_MIGRATIONS: list[Migration] = [Migration("0720_voice_modes", VOICE_TABLE)]


class SqliteVoiceModes:
    """The choices in the daemon's SQLite file; PostgreSQL's
    (:class:`~thalos_bot.storage.pg.voice_modes.PgVoiceModes`) is this with its
    placeholders."""

    mark = "?"

    def __init__(self, db: Database) -> None:
        self._db: Any = db

    async def _one(self, conn: Any, sql: str, values: tuple[object, ...]) -> Any:
        return await fetch_one(conn, sql, values)

    async def get(self, channel_id: str, conversation_id: str) -> str | None:
        async with self._db.read() as conn:
            row = await self._one(conn, _GET.replace("?", self.mark), (channel_id, conversation_id))
        return None if row is None else str(row["mode"])

    async def set(self, channel_id: str, conversation_id: str, mode: str) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(_SET.replace("?", self.mark), (channel_id, conversation_id, mode))


_GET = "SELECT mode FROM voice_modes WHERE channel_id = ? AND conversation_id = ?"
_SET = (
    "INSERT INTO voice_modes (channel_id, conversation_id, mode) VALUES (?, ?, ?)"
    " ON CONFLICT (channel_id, conversation_id) DO UPDATE SET mode = excluded.mode"
)
