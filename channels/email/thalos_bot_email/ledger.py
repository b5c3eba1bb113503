"""What the channel must not forget across restarts, as marks in the host's store (the
kit's :class:`~thalos_bot.channels.marks.ChatMarks`; in memory only without one):

- ``uid <validity> <folder>``: the folder's UID cursor per ``UIDVALIDITY``, every mail
  below it done (a new UIDVALIDITY finds no cursor);
- ``done <message-id>``: a mail read again (intake is at least once) starts no second
  turn. A mail is done when skipped, its command answered, or its turn's final in the
  outbox (the engine's ``answering`` hook, before the send).
"""

from __future__ import annotations

from datetime import timedelta

import structlog

from thalos_bot.channels.marks import ChatMarks
from thalos_bot.domain.ids import ChannelId

log = structlog.get_logger(__name__)

RETENTION = timedelta(days=120)


class Ledger:
    def __init__(self, store: ChatMarks | None, channel_id: ChannelId) -> None:
        self._store = store
        self._channel = channel_id
        self._marks: dict[str, int] = {}
        self._pending: set[int] = set()
        self.read = 0
        """The highest UID read (the next search starts above it)."""
        self._cursor_key = ""

    async def load(self) -> None:
        if self._store is None:
            log.warning("email_ledger_in_memory_only")
            return
        await self._store.prune(self._channel, RETENTION)
        self._marks = await self._store.load(self._channel)

    async def cursor(self, folder: str, validity: int, last: int) -> bool:
        """Take up the folder's cursor for this UIDVALIDITY. A folder seen the first time
        starts at ``last`` (what is there now is not read). True: a cursor was kept for
        another UIDVALIDITY only (the mails are numbered anew): reading goes on from
        ``last`` too, and the caller reads the recent ones by their UIDs, those done
        known by their Message-ID."""
        self._cursor_key = key = f"uid {validity} {folder}"
        stored = self._marks.get(key)
        if stored is not None:
            self.read = stored - 1  # kept plus one: a mark is above 0
            return False
        self.read = last
        if any(k.startswith("uid ") and k.split(" ", 2)[2:] == [folder] for k in self._marks):
            return True  # its cursor is written once the recent mails are done
        log.info("email_cursor_started", folder=folder, at=last)
        await self._write({key: last + 1})
        return False

    def handled(self, message_id: str) -> bool:
        return f"done {message_id}" in self._marks

    def reading(self, uid: int) -> None:
        """Mail ``uid`` is being dealt with (the cursor stays below it until done)."""
        self._pending.add(uid)
        self.read = max(self.read, uid)

    async def done(self, uid: int | None, message_id: str | None) -> None:
        """Mail ``uid`` (with ``message_id``) is done: written before this returns."""
        marks: dict[str, int] = {}
        if message_id is not None and not self.handled(message_id):
            marks[f"done {message_id}"] = 1
        if uid is not None:
            self._pending.discard(uid)
            floor = min(self._pending) - 1 if self._pending else self.read
            if floor + 1 > self._marks.get(self._cursor_key, 0):
                marks[self._cursor_key] = floor + 1
        await self._write(marks)

    async def _write(self, marks: dict[str, int]) -> None:
        self._marks.update(marks)
        if not marks or self._store is None:
            return
        try:
            await self._store.raise_marks(self._channel, marks)
        except Exception:
            log.exception("email_ledger_unsaved", marks=len(marks))
