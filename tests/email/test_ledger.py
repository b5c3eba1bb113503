"""The ledger's UID cursor across restarts: a folder seen the first time starts at its
last mail, a kept cursor is taken up, stays below a mail not done yet, and a new
UIDVALIDITY asks for the recent mails to be read again."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta

import pytest

from thalos_bot.domain.ids import ChannelId
from thalos_bot_email.ledger import Ledger

pytestmark = pytest.mark.anyio

CHANNEL = ChannelId("email")


class Marks:
    """The host's store of marks, as :class:`~thalos_bot.channels.marks.ChatMarks`."""

    def __init__(self) -> None:
        self.kept: dict[str, int] = {}

    async def load(self, channel_id: ChannelId) -> dict[str, int]:
        return dict(self.kept)

    async def raise_marks(self, channel_id: ChannelId, marks: Mapping[str, int]) -> None:
        for key, mark in marks.items():
            self.kept[key] = max(mark, self.kept.get(key, 0))

    async def prune(
        self, channel_id: ChannelId, older_than: timedelta, *, keep: Sequence[str] = ()
    ) -> int:
        return 0


async def _ledger(store: Marks) -> Ledger:
    ledger = Ledger(store, CHANNEL)
    await ledger.load()
    return ledger


async def test_the_cursor_starts_at_the_last_mail_and_moves_past_mails_done() -> None:
    store = Marks()
    first = await _ledger(store)
    assert await first.cursor("INBOX", 7, 10) is False
    assert first.read == 10, "what was there at the first start is not read"
    first.reading(11)
    first.reading(12)
    await first.done(12, "<b@x>")
    again = await _ledger(store)
    assert await again.cursor("INBOX", 7, 12) is False
    assert again.read == 10, "mail 11 is not done: the next start reads it again"
    assert again.handled("<b@x>")
    again.reading(11)
    again.reading(12)
    await again.done(12, "<b@x>")  # read again, known as done: skipped
    await again.done(11, "<a@x>")
    later = await _ledger(store)
    assert await later.cursor("INBOX", 7, 12) is False
    assert later.read == 12


async def test_a_new_uidvalidity_reads_the_recent_mails_again() -> None:
    store = Marks()
    await (await _ledger(store)).cursor("INBOX", 7, 10)
    renumbered = await _ledger(store)
    assert await renumbered.cursor("INBOX", 8, 3) is True
    assert renumbered.read == 3, "the recent mails are read by their UIDs, not the whole folder"
    renumbered.reading(2)
    await renumbered.done(2, "<a@x>")
    again = await _ledger(store)
    assert await again.cursor("INBOX", 8, 4) is False, "its cursor was written"
    assert again.read == 3
    assert await renumbered.cursor("Work", 8, 5) is False, "another folder: seen the first time"
    assert renumbered.read == 5


async def test_a_folder_is_known_by_its_whole_name() -> None:
    store = Marks()
    await (await _ledger(store)).cursor("Archive INBOX", 7, 10)
    ledger = await _ledger(store)
    assert await ledger.cursor("INBOX", 7, 4) is False, "INBOX is seen the first time"
    assert ledger.read == 4
