"""The highest message ids a transport knows, kept in the host's database across
restarts (the :class:`~thalos_bot.channels.marks.ChatMarks` port), noted at once and
written in batches.

A transport whose "did that send arrive?" probe starts from the highest id known (see
Telegram's ``thalos_bot_telegram.counter``), or that reads back what was said while it
was away from the last id it admitted (Discord's catch-up), loses it at every restart if
it keeps it in memory only: a daemon that sends a scheduled result to a chat where
nobody wrote since it started would have no floor. So marks are written to the database
and read back at start: one per chat the bot talks with, and one for a counter several
chats share (key :data:`ACCOUNT`, e.g. a Telegram bot account's). A chat is keyed by the
transport's own address as a string, opaque to the book (Telegram's chat id, a Slack
conversation's channel id); the marks are integers that grow with the messages (an id,
or a Slack ``ts`` in microseconds).

Writes stay cheap: only an id above the stored mark is written, and a batch goes in one
write. The transport decides when to :meth:`MarkBook.flush` (Telegram: before a batch of
updates is acknowledged, and after each of the bot's own sends, before its next call).
A mark that says where to read back from is noted only once the pump took its message
(:meth:`MarkBook.note_when_taken`), so a stop never leaves one past a message not taken.
Pruning: at start, the marks of chats not raised for :data:`MARK_RETENTION` are deleted
(never the account's).
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import timedelta

import anyio
import structlog

from thalos_bot.channels.marks import ChatMarks
from thalos_bot.channels.ports import InboundMessage
from thalos_bot.domain.ids import ChannelId

log = structlog.get_logger(__name__)

_EVENTS = ("unreadable", "loaded", "unsaved")
ACCOUNT = "account"
"""The key of the bot account's mark."""
MARK_RETENTION = timedelta(days=90)
"""A chat's mark not raised for this long is deleted at start."""
DUE_MOST = 1_000
"""The most marks held for their message to be taken."""
CLOSE_BOUND = 2.0
"""Seconds the closing write may take at a stop (a store that hangs must not hold it)."""


class MarkBook:
    """The marks of one channel: noted at once, written in batches."""

    def __init__(self, store: ChatMarks | None, channel_id: ChannelId) -> None:
        self._store = store
        self._channel_id = channel_id
        self._events = {kind: f"{channel_id}_marks_{kind}" for kind in _EVENTS}
        self._stored: dict[str, int] = {}
        self._dirty: dict[str, int] = {}
        self._due: OrderedDict[str, tuple[str, int]] = OrderedDict()
        self._lock = anyio.Lock()
        self._wake = anyio.Event()
        self.account = 0
        """The account's mark read at start (0: none)."""

    async def load(self) -> dict[str, int]:
        """The chat marks the previous process left, by chat key (and :attr:`account`),
        after pruning the stale ones. Empty without a store, or when they cannot be
        read: then the daemon starts as if it knew none."""
        if self._store is None:
            return {}
        try:
            pruned = await self._store.prune(self._channel_id, MARK_RETENTION, keep=(ACCOUNT,))
            raw = await self._store.load(self._channel_id)
        except Exception:
            log.exception(self._events["unreadable"])
            return {}
        self.account = raw.pop(ACCOUNT, 0)
        self._stored.update(raw)
        self._stored[ACCOUNT] = self.account
        log.info(self._events["loaded"], chats=len(raw), account=self.account, pruned=pruned)
        return dict(raw)

    def known(self) -> dict[str, int]:
        """Every chat's highest mark known now (stored or noted), by chat key."""
        keys = (self._stored.keys() | self._dirty.keys()) - {ACCOUNT}
        return {key: max(self._stored.get(key, 0), self._dirty.get(key, 0)) for key in keys}

    def note(self, chat: str, mark: int) -> None:
        """A message with this mark exists in the chat (written by the next flush)."""
        self._note(_chat(chat), mark)

    def note_when_taken(self, ref: str, chat: str, mark: int) -> None:
        """The message ``ref`` (its :attr:`InboundMessage.message_ref`) has this mark in
        the chat, noted only once the pump takes it (:meth:`taken`, the inlet's hook): a
        stop before then (its files still in work, or it waiting in the inlet) leaves
        the mark below it, so the next start's catch-up reads it again."""
        if self._store is not None:
            self._due[ref] = (_chat(chat), mark)
            while len(self._due) > DUE_MOST:  # refused by the intake: never taken
                self._due.popitem(last=False)

    async def taken(self, message: InboundMessage) -> None:
        """The inlet's ``taken``: ``message``'s mark noted and every mark noted so far
        written, before the pump has it (a kill in its turn then never gets it caught
        up on again)."""
        due = self._due.pop(message.message_ref, None) if message.message_ref else None
        if due is not None:
            self._note(*due)
        await self.flush()

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
        under way included). A failed write is logged and kept for the next one, and so
        is one a stop cut short (the closing flush then writes it)."""
        if self._store is None:
            return
        async with self._lock:
            batch, self._dirty = self._dirty, {}
            if not batch:
                return
            written = False
            try:
                await self._store.raise_marks(self._channel_id, batch)
                written = True
            except Exception:
                log.exception(self._events["unsaved"], chats=len(batch))
                return
            finally:
                if not written:  # failed, or cut by a stop: the next flush writes it
                    for key, mark in batch.items():
                        if mark > self._dirty.get(key, 0):
                            self._dirty[key] = mark
            for key, mark in batch.items():
                self._stored[key] = max(mark, self._stored.get(key, 0))

    async def close(self) -> None:
        """The closing write at a stop, so what was noted is known to the next start:
        shielded from the stop's cancellation, and bounded by :data:`CLOSE_BOUND`."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_BOUND):
            await self.flush()

    async def run(self) -> None:
        """Write the marks noted outside a send (the user's messages) as they come."""
        if self._store is None:
            return
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            await self.flush()


def _chat(key: str) -> str:
    """A chat's key, never the account's (whose mark is another counter's)."""
    if key == ACCOUNT:
        raise ValueError(f"{ACCOUNT!r} is the account's key, not a chat's")
    return key
