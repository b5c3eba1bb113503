"""The mark book: what it writes, when, and what a failed write leaves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import anyio
import pytest
from structlog.testing import capture_logs

from thalos_bot.channels.delivery import markbook
from thalos_bot.channels.delivery.markbook import MARK_RETENTION, MarkBook
from thalos_bot.domain.ids import ChannelId

pytestmark = pytest.mark.anyio

TG = ChannelId("telegram")


@dataclass
class Store:
    stored: dict[str, int] = field(default_factory=dict)
    writes: list[dict[str, int]] = field(default_factory=list)
    broken: bool = False
    pruned: list[tuple[timedelta, tuple[str, ...]]] = field(default_factory=list)

    async def load(self, channel_id: ChannelId) -> dict[str, int]:
        return dict(self.stored)

    async def raise_marks(self, channel_id: ChannelId, marks: Mapping[str, int]) -> None:
        if self.broken:
            raise OSError("disk full")
        self.writes.append(dict(marks))
        for chat, mark in marks.items():
            self.stored[chat] = max(mark, self.stored.get(chat, 0))

    async def prune(
        self, channel_id: ChannelId, older_than: timedelta, *, keep: Sequence[str] = ()
    ) -> int:
        self.pruned.append((older_than, tuple(keep)))
        return 0


async def test_only_raised_marks_are_written_in_one_batch() -> None:
    store = Store({"42": 10})
    book = MarkBook(store, TG)
    assert await book.load() == {"42": 10}
    book.note("42", 9)  # below what is stored: nothing to write
    book.note("42", 11)
    book.note("42", 12)
    book.note("-5", 3)
    await book.flush()
    await book.flush()
    assert store.writes == [{"42": 12, "-5": 3}]


async def test_a_failed_write_is_logged_and_made_at_the_next_flush() -> None:
    store = Store(broken=True)
    book = MarkBook(store, TG)
    book.note("42", 3)
    with capture_logs() as logs:
        await book.flush()
    assert [e["event"] for e in logs] == ["telegram_marks_unsaved"]
    store.broken = False
    book.note("42", 2)  # lower than the unsaved 3: the 3 is still written
    await book.flush()
    assert store.writes == [{"42": 3}]


async def test_without_a_store_nothing_is_kept() -> None:
    book = MarkBook(None, TG)
    book.note("42", 3)
    await book.flush()
    assert await book.load() == {}


async def test_the_account_mark_is_read_back_and_stale_chat_marks_pruned_first() -> None:
    store = Store({"42": 10, "account": 30})
    book = MarkBook(store, TG)
    assert await book.load() == {"42": 10}, "the account's mark is not a chat's"
    assert book.account == 30
    assert store.pruned == [(MARK_RETENTION, ("account",))], "never the account's"
    book.note_account(29)  # below what is stored
    book.note_account(31)
    book.note("42", 11)
    await book.flush()
    assert store.writes == [{"account": 31, "42": 11}]


@dataclass
class StuckStore(Store):
    """A write that does not come back until let go (a slow or locked disk)."""

    let_go: anyio.Event = field(default_factory=anyio.Event)
    writing: anyio.Event = field(default_factory=anyio.Event)

    async def raise_marks(self, channel_id: ChannelId, marks: Mapping[str, int]) -> None:
        self.writing.set()
        await self.let_go.wait()
        await super().raise_marks(channel_id, marks)


async def test_a_write_cut_by_the_stop_is_made_by_the_last_flush() -> None:
    """Discord writes its marks in the background and once more as it closes: a stop
    that cancels the background write must leave that batch to the closing flush, or
    the next start's catch-up reads the message again and answers it twice."""
    store = StuckStore()
    book = MarkBook(store, ChannelId("discord"))
    async with anyio.create_task_group() as group:
        group.start_soon(book.run)
        book.note("42", 7)
        with anyio.fail_after(5):
            await store.writing.wait()
        group.cancel_scope.cancel()
    store.let_go.set()
    await book.flush()
    assert store.stored == {"42": 7}


async def test_the_closing_write_is_made_in_a_stop_and_a_hung_store_cannot_hold_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = Store()
    book = MarkBook(store, TG)
    book.note("42", 7)
    with anyio.CancelScope() as stopping:
        stopping.cancel()
        await book.close()
    assert store.stored == {"42": 7}, "written though the stop cancels its scope"
    hung = StuckStore()
    book = MarkBook(hung, ChannelId("discord"))
    book.note("1", 2)
    monkeypatch.setattr(markbook, "CLOSE_BOUND", 0.01)
    with anyio.fail_after(5):
        await book.close()
    assert hung.stored == {}


async def test_a_chat_is_keyed_by_the_transports_own_address_never_as_the_account() -> None:
    """Slack's conversations are ``C…``/``D…`` ids and its marks a ``ts`` in
    microseconds: the book keeps them as given; the account's key is no chat's."""
    store = Store({"account": 30})
    book = MarkBook(store, ChannelId("slack"))
    assert await book.load() == {}
    book.note("C0LISTED", 1_700_000_000_000_100)
    book.note_when_taken("1700000000.000200", "D0DM", 1_700_000_000_000_200)
    assert book.known() == {"C0LISTED": 1_700_000_000_000_100}
    await book.flush()
    again = MarkBook(store, ChannelId("slack"))
    assert await again.load() == {"C0LISTED": 1_700_000_000_000_100}
    assert again.account == 30
    with pytest.raises(ValueError, match="account"):
        book.note("account", 31)
    with pytest.raises(ValueError, match="account"):
        book.note_when_taken("ref", "account", 31)
