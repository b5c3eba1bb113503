"""The page's finals kept as outbox rows go through the kit's delivery engine: journaled
before the append, appended once by their key, and a daemon killed around the append
shows the answer exactly once after its restart (the page's events in the daemon's
SQLite file)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import anyio
import pytest

from tests.web.seats import owner_seats
from thalos_bot.channels.final import ConfirmingAdapter, ConfirmingNotices
from thalos_bot.channels.ports import Notice, TurnStarted
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.web_events import SqlitePageEvents
from thalos_bot_web.adapter import WebAdapter
from thalos_bot_web.wire import page_engine

pytestmark = pytest.mark.anyio

CHAT = ConversationId("owner")
FINAL = "The **answer**."


@dataclass
class Journal:
    progress: Mapping[str, object] = field(default_factory=dict)
    confirmed: anyio.Event = field(default_factory=anyio.Event)
    hang: str | None = None
    """``save`` or ``confirm``: that call keeps what it was given and never returns."""

    async def save(self, progress: Mapping[str, object]) -> None:
        self.progress = dict(progress)
        if self.hang == "save":
            await anyio.sleep_forever()

    async def confirm(self) -> None:
        if self.hang == "confirm":
            await anyio.sleep_forever()
        self.confirmed.set()

    async def refuse(self) -> None:
        raise AssertionError("refused")


@asynccontextmanager
async def daemon(
    folder: Path, store: Callable[[Database], SqlitePageEvents] = SqlitePageEvents
) -> AsyncIterator[WebAdapter]:
    """One process's page, its events in the SQLite file in ``folder``, run as the
    plug-in runs it (what a gone process left half-shown forgotten first); leaving it
    without draining is a kill."""
    folder.mkdir(exist_ok=True)
    async with await Database.open(folder / "pages.db", migrations=ALL_MIGRATIONS) as db:
        events = store(db)
        await events.started()
        adapter = WebAdapter(
            ChannelId("web"),
            flush_interval=0.05,
            keep_events=50,
            seats=owner_seats(CHAT),
            store=events,
        )
        async with anyio.create_task_group() as group:
            adapter.engine = page_engine(adapter, group)
            group.start_soon(adapter.relay.run)
            group.start_soon(adapter.relay.follow)
            yield adapter
            group.cancel_scope.cancel()


def finals(adapter: WebAdapter) -> list[str]:
    return [e.data["html"] for e in adapter.timeline(CHAT).events() if e.kind == "final"]


async def test_a_final_is_journaled_appended_once_and_confirmed(tmp_path: Path) -> None:
    journal = Journal()
    with anyio.fail_after(10):
        async with daemon(tmp_path) as page:
            assert isinstance(page, ConfirmingAdapter)
            await page.deliver(CHAT, TurnStarted())
            await page.deliver_final(CHAT, FINAL, journal, ends_turn=True)
            await page.deliver(CHAT, Notice("after the answer"))  # waits for the final
            await journal.confirmed.wait()
            await page.relay.written()
            events = page.timeline(CHAT).events()
    assert [e.kind for e in events] == ["turn", "final", "notice"]
    turn, final = events[0], events[1]
    assert final.turn == turn.data["turn"], "the final closes the turn the page opened"
    assert final.data["html"] == "<p>The <strong>answer</strong>.</p>\n"
    assert final.data["key"] == journal.progress["key"], "journaled before the append"


@pytest.mark.parametrize("hang", ["save", "confirm"], ids=["before the append", "after it"])
async def test_killed_around_the_append_the_restart_shows_it_once(
    tmp_path: Path, hang: str
) -> None:
    journal = Journal(hang=hang)
    with anyio.fail_after(10):
        async with daemon(tmp_path) as first:
            await first.deliver_final(CHAT, FINAL, journal, ends_turn=False)
            while "key" not in journal.progress or (hang == "confirm" and not finals(first)):
                await anyio.sleep(0.01)
        assert journal.progress["parts_done"] == 0
        again = Journal(journal.progress)
        async with daemon(tmp_path) as second:
            await second.deliver_final(CHAT, FINAL, again, ends_turn=False)
            await again.confirmed.wait()
            shown = finals(second)
    assert shown == ["<p>The <strong>answer</strong>.</p>\n"]


async def test_another_answer_with_the_same_text_is_shown_again(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with daemon(tmp_path) as page:
            for _ in range(2):
                journal = Journal()
                await page.deliver_final(CHAT, FINAL, journal, ends_turn=False)
                await journal.confirmed.wait()
            assert len(finals(page)) == 2, "the key is the row's part, not its text"


async def test_a_notice_row_is_shown_as_a_notice_with_its_tone(tmp_path: Path) -> None:
    """A detached failure kept as a notice row is a warning notice in plain text, after
    the final queued before it, not a final bubble rendered as markdown."""
    first, then = Journal(), Journal()
    with anyio.fail_after(10):
        async with daemon(tmp_path) as page:
            assert isinstance(page, ConfirmingNotices)
            await page.deliver_final(CHAT, FINAL, first, ends_turn=False)
            await page.deliver_notice(CHAT, Notice("The **job** failed.", "warning"), then)
            await then.confirmed.wait()
            events = page.timeline(CHAT).events()
    assert first.confirmed.is_set()
    assert [e.kind for e in events] == ["final", "notice"]
    assert events[1].data["tone"] == "warning"
    assert events[1].data["html"] == "The **job** failed."


async def test_a_resumed_final_closes_the_turn_its_row_noted(tmp_path: Path) -> None:
    """The turn a final closes is noted in its row's progress (the key of the answer's
    one message, which names the turn): resumed by another process, the final lands
    under that turn, not under a new one (nothing is kept beside the row)."""
    journal = Journal(hang="save")
    with anyio.fail_after(10):
        async with daemon(tmp_path) as first, anyio.create_task_group() as killed:
            await first.deliver(CHAT, TurnStarted())
            # Its first note hangs (the process dies there): the row's state is that note.
            killed.start_soon(partial(first.deliver_final, CHAT, FINAL, journal, ends_turn=True))
            while "key" not in journal.progress or not first.timeline(CHAT).events():
                await anyio.sleep(0.01)
            (opened,) = [e for e in first.timeline(CHAT).events() if e.kind == "turn"]
            killed.cancel_scope.cancel()
        again = Journal(journal.progress)
        async with daemon(tmp_path) as second:
            await second.deliver_final(CHAT, FINAL, again, ends_turn=False)
            await again.confirmed.wait()
            (final,) = [e for e in second.timeline(CHAT).events() if e.kind == "final"]
    assert journal.progress["key"] == opened.data["turn"]
    assert final.turn == opened.data["turn"]
