"""Each conversation's ``/voice`` choice (``on``, ``off``, ``auto``), kept across
restarts; a conversation with none follows ``[speech] mode``."""

from __future__ import annotations

from thalos_bot.storage.dialect import SqliteDialect
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


class SqliteVoiceModes(SqliteDialect):
    """The choices in the daemon's SQLite file; PostgreSQL's
    (:class:`~thalos_bot.storage.pg.voice_modes.PgVoiceModes`) is this in its dialect."""

    async def get(self, channel_id: str, conversation_id: str) -> str | None:
        async with self._db.read() as conn:
            row = await self._one(conn, _GET, (channel_id, conversation_id))
        return None if row is None else str(row["mode"])

    async def set(self, channel_id: str, conversation_id: str, mode: str) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(self._sql(_SET), (channel_id, conversation_id, mode))


_GET = "SELECT mode FROM voice_modes WHERE channel_id = ? AND conversation_id = ?"
_SET = (
    "INSERT INTO voice_modes (channel_id, conversation_id, mode) VALUES (?, ?, ?)"
    " ON CONFLICT (channel_id, conversation_id) DO UPDATE SET mode = excluded.mode"
)
