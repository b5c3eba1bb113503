"""The highest message id each channel knows in each of its chats (see
:mod:`thalos_bot.channels.marks`), one row per chat (or shared counter), only ever
raised; rows not raised for a while are pruned."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta

from thalos_bot.domain.clock import utc_now
from thalos_bot.domain.ids import ChannelId
from thalos_bot.storage.database import Database, encode_time, fetch_all
from thalos_bot.storage.migrations import Migration

CHAT_MARK_MIGRATIONS: list[Migration] = [
    Migration(
        "0520_chat_marks",
        """
        CREATE TABLE chat_marks (
            channel_id TEXT NOT NULL,
            chat       TEXT NOT NULL,
            message_id INTEGER NOT NULL CHECK (message_id > 0),
            updated_at TEXT NOT NULL,
            PRIMARY KEY (channel_id, chat)
        ) WITHOUT ROWID;
        """,
    ),
]

_RAISE = """
INSERT INTO chat_marks (channel_id, chat, message_id, updated_at) VALUES (?, ?, ?, ?)
ON CONFLICT (channel_id, chat) DO UPDATE SET
    message_id = excluded.message_id, updated_at = excluded.updated_at
WHERE excluded.message_id > chat_marks.message_id
"""


class SqliteChatMarks:
    """:class:`~thalos_bot.channels.marks.ChatMarks` in the shared :class:`Database`."""

    def __init__(self, db: Database, clock: Callable[[], datetime] = utc_now) -> None:
        self._db = db
        self._clock = clock

    async def load(self, channel_id: ChannelId) -> dict[str, int]:
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn, "SELECT chat, message_id FROM chat_marks WHERE channel_id = ?", (channel_id,)
            )
        return {str(row["chat"]): int(row["message_id"]) for row in rows}

    async def raise_marks(self, channel_id: ChannelId, marks: Mapping[str, int]) -> None:
        if not marks:
            return
        stamp = encode_time(self._clock())
        rows = [(channel_id, chat, mark, stamp) for chat, mark in marks.items() if mark > 0]
        async with self._db.transaction() as conn:
            await conn.executemany(_RAISE, rows)

    async def prune(
        self, channel_id: ChannelId, older_than: timedelta, *, keep: Sequence[str] = ()
    ) -> int:
        cutoff = encode_time(self._clock() - older_than)
        # `chat NOT IN (NULL)` is NULL for every row, so an empty `keep` leaves out the clause
        spared = ", ".join("?" for _ in keep)
        sql = "DELETE FROM chat_marks WHERE channel_id = ? AND updated_at < ?"
        if spared:
            sql += f" AND chat NOT IN ({spared})"
        async with self._db.transaction() as conn:
            cursor = await conn.execute(sql, (channel_id, cutoff, *keep))
            return int(cursor.rowcount)
