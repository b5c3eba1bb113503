"""The highest message id known in each chat, kept in the host's database.

The check of a send in doubt (:mod:`thalos_bot_telegram.uncertain`) starts from the
highest id known in the chat. Kept only in memory, that is lost at every restart: a
daemon that sends a scheduled result to a chat where nobody wrote since it started has
no floor, and would have to send again blindly after a timeout. So every id that raises
a chat's mark is written to the database (see :mod:`thalos_bot.channels.marks`), and
read back at start.

Writes stay cheap: only an id above the stored mark is written, the ids of one batch of
updates go in one write, and the bot's own messages are written by the chat's sender
before its next call (so that a mark the next process reads never lags behind a
message of the bot's: a probe above it must not find one and rewrite it). The user's
messages may lag without harm: a probe meeting one just moves on to the next id.
"""

from __future__ import annotations

import anyio
import structlog

from thalos_bot.channels.marks import ChatMarks
from thalos_bot.domain.ids import ChannelId

log = structlog.get_logger(__name__)


class MarkBook:
    """The marks of one channel's chats: noted at once, written in batches."""

    def __init__(self, store: ChatMarks | None, channel_id: ChannelId) -> None:
        self._store = store
        self._channel_id = channel_id
        self._stored: dict[int, int] = {}
        self._dirty: dict[int, int] = {}
        self._lock = anyio.Lock()
        self._wake = anyio.Event()

    async def load(self) -> dict[int, int]:
        """The marks the previous process left, by chat id (empty without a store, or
        when they cannot be read: then the daemon starts as if it knew none)."""
        if self._store is None:
            return {}
        try:
            raw = await self._store.load(self._channel_id)
        except Exception:
            log.exception("telegram_marks_unreadable")
            return {}
        marks = {int(chat): mark for chat, mark in raw.items() if _is_chat(chat)}
        self._stored.update(marks)
        log.info("telegram_marks_loaded", chats=len(marks))
        return dict(marks)

    def note(self, chat_id: int, message_id: int) -> None:
        """A message with this id exists in the chat (written by the next flush)."""
        if self._store is None:
            return
        known = max(self._stored.get(chat_id, 0), self._dirty.get(chat_id, 0))
        if message_id > known:
            self._dirty[chat_id] = message_id
            self._wake.set()

    async def flush(self) -> None:
        """Write every mark noted so far; return once it is written (a write already
        under way included). A failed write is logged and kept for the next one."""
        if self._store is None:
            return
        async with self._lock:
            batch, self._dirty = self._dirty, {}
            if not batch:
                return
            try:
                await self._store.raise_marks(
                    self._channel_id, {str(chat): mark for chat, mark in batch.items()}
                )
            except Exception:
                log.exception("telegram_marks_unsaved", chats=len(batch))
                for chat, mark in batch.items():
                    if mark > self._dirty.get(chat, 0):
                        self._dirty[chat] = mark
                return
            for chat, mark in batch.items():
                self._stored[chat] = max(mark, self._stored.get(chat, 0))

    async def run(self) -> None:
        """Write the marks noted outside a send (the user's messages) as they come."""
        if self._store is None:
            return
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            await self.flush()


def _is_chat(key: str) -> bool:
    return key.lstrip("-").isdigit()
