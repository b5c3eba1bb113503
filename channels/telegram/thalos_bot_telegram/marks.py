"""The highest message ids known, kept in the host's database across restarts.

The check of a send in doubt (:mod:`thalos_bot_telegram.uncertain`) starts from the
highest id known in the counter the chat draws from (see
:mod:`thalos_bot_telegram.counter`). Kept only in memory, that is lost at every
restart: a daemon that sends a scheduled result to a chat where nobody wrote since it
started has no floor, and would have to send again blindly after a timeout. So two
kinds of mark are written to the database (see :mod:`thalos_bot.channels.marks`) and
read back at start:

* the bot account's mark (key ``"account"``): the highest id known in the account's one
  counter, which every private chat and basic group draws from. It learns from every
  update's id, whoever sent it and whether or not it was admitted: it is one number;
* a mark per chat (key: the chat id), for the chats the bot talks with only (a chat's
  outbox notes them: see :class:`thalos_bot_telegram.outbox.ChatOutbox`), so strangers
  leave no rows. A supergroup's mark is its counter's bound; a private chat's tells a
  restarted check which id there is that chat's latest (another chat's need no probe).

Writes stay cheap: only an id above the stored mark is written, the ids of one batch of
updates go in one write, made before the batch is acknowledged (so a restarted daemon
knows every id Telegram will not hand it again: see
:meth:`thalos_bot_telegram.adapter.TelegramAdapter.noting`), and the bot's own messages
are written by the chat's sender before its next call (so that a mark the next process
reads never lags behind a message of the bot's: a probe above it must not find one and
rewrite it). The user's messages may lag without harm: a probe meeting one just moves on
to the next id.

Pruning: at start, the marks of chats not raised for :data:`MARK_RETENTION` are
deleted (never the account's). A private chat or basic group loses nothing by it (its
floor is the account's mark); a supergroup silent that long has its next send in doubt
sent again if nobody wrote there since the start (logged as unverifiable).
"""

from __future__ import annotations

from datetime import timedelta

import anyio
import structlog

from thalos_bot.channels.marks import ChatMarks
from thalos_bot.domain.ids import ChannelId

log = structlog.get_logger(__name__)

ACCOUNT = "account"
"""The key of the bot account's mark."""
MARK_RETENTION = timedelta(days=90)
"""A chat's mark not raised for this long is deleted at start."""


class MarkBook:
    """The marks of one channel: noted at once, written in batches."""

    def __init__(self, store: ChatMarks | None, channel_id: ChannelId) -> None:
        self._store = store
        self._channel_id = channel_id
        self._stored: dict[str, int] = {}
        self._dirty: dict[str, int] = {}
        self._lock = anyio.Lock()
        self._wake = anyio.Event()
        self.account = 0
        """The account's mark read at start (0: none)."""

    async def load(self) -> dict[int, int]:
        """The chat marks the previous process left, by chat id (and :attr:`account`),
        after pruning the stale ones. Empty without a store, or when they cannot be
        read: then the daemon starts as if it knew none."""
        if self._store is None:
            return {}
        try:
            pruned = await self._store.prune(self._channel_id, MARK_RETENTION, keep=(ACCOUNT,))
            raw = await self._store.load(self._channel_id)
        except Exception:
            log.exception("telegram_marks_unreadable")
            return {}
        marks = {int(chat): mark for chat, mark in raw.items() if _is_chat(chat)}
        self.account = raw.get(ACCOUNT, 0)
        self._stored.update({str(chat): mark for chat, mark in marks.items()})
        self._stored[ACCOUNT] = self.account
        log.info("telegram_marks_loaded", chats=len(marks), account=self.account, pruned=pruned)
        return dict(marks)

    def note(self, chat_id: int, message_id: int) -> None:
        """A message with this id exists in the chat (written by the next flush)."""
        self._note(str(chat_id), message_id)

    def note_account(self, message_id: int) -> None:
        """A message with this id exists in the account's counter."""
        self._note(ACCOUNT, message_id)

    def _note(self, key: str, message_id: int) -> None:
        if self._store is None:
            return
        known = max(self._stored.get(key, 0), self._dirty.get(key, 0))
        if message_id > known:
            self._dirty[key] = message_id
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
                await self._store.raise_marks(self._channel_id, batch)
            except Exception:
                log.exception("telegram_marks_unsaved", chats=len(batch))
                for key, mark in batch.items():
                    if mark > self._dirty.get(key, 0):
                        self._dirty[key] = mark
                return
            for key, mark in batch.items():
                self._stored[key] = max(mark, self._stored.get(key, 0))

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
