"""The chats' highest message ids on PostgreSQL (the interface of
:class:`~thalos_bot.storage.chat_marks.SqliteChatMarks`): one row per chat, only ever
raised, also when two replicas raise one mark at once (the upsert's ``WHERE``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta

from thalos_bot.domain.clock import utc_now
from thalos_bot.domain.ids import ChannelId
from thalos_bot.storage.database import as_utc
from thalos_bot.storage.pg.database import PgDatabase, fetch_all

_RAISE = """
INSERT INTO chat_marks AS m (channel_id, chat, message_id, updated_at)
VALUES (%s, %s, %s, %s)
ON CONFLICT (channel_id, chat) DO UPDATE SET
    message_id = excluded.message_id, updated_at = excluded.updated_at
WHERE excluded.message_id > m.message_id
"""


class PgChatMarks:
    """:class:`~thalos_bot.channels.marks.ChatMarks` in a :class:`PgDatabase`."""

    def __init__(self, db: PgDatabase, clock: Callable[[], datetime] = utc_now) -> None:
        self._db = db
        self._clock = clock

    async def load(self, channel_id: ChannelId) -> dict[str, int]:
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT chat, message_id FROM chat_marks WHERE channel_id = %s",
                (channel_id,),
            )
        return {str(row["chat"]): int(row["message_id"]) for row in rows}

    async def raise_marks(self, channel_id: ChannelId, marks: Mapping[str, int]) -> None:
        if not marks:
            return
        stamp = as_utc(self._clock())
        # Sorted, so two replicas raising overlapping sets lock rows in one order.
        rows = [(channel_id, chat, mark, stamp) for chat, mark in sorted(marks.items()) if mark > 0]
        if not rows:
            return
        async with self._db.transaction() as conn, conn.cursor() as cursor:
            await cursor.executemany(_RAISE, rows)

    async def prune(
        self, channel_id: ChannelId, older_than: timedelta, *, keep: Sequence[str] = ()
    ) -> int:
        """Delete the channel's marks not raised for ``older_than`` (but those keyed
        ``keep``); return how many were deleted."""
        cutoff = as_utc(self._clock() - older_than)
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "DELETE FROM chat_marks WHERE channel_id = %s AND updated_at < %s"
                " AND chat <> ALL(%s)",
                (channel_id, cutoff, list(keep)),
            )
            return cursor.rowcount
