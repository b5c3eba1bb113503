"""The page's finals through the delivery engine on replicas, on a real PostgreSQL: a
final written to the shared store by one replica (which died before its outbox row was
confirmed) is found there by the replica that takes the row over, so it is shown once;
and a final no replica wrote is written by the one that takes it over."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from functools import partial
from typing import Any

import anyio
import pytest

from tests.cluster.test_web_events import OWNER, SEATS, db, replica
from tests.web.test_engine_finals import Journal
from thalos_bot.channels.ports import Notice, TextUpdate, TurnStarted
from thalos_bot.cluster.page_events import PgPageEvents
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot_web.adapter import WebAdapter
from thalos_bot_web.relay import Relay
from thalos_bot_web.wire import page_engine

pytestmark = pytest.mark.anyio
__all__ = ["db"]
FINAL = "The answer."


@pytest.fixture
async def page(db: PgDatabase) -> AsyncIterator[tuple[WebAdapter, WebAdapter]]:
    """Two replicas' pages, each with its engine and its relay running."""
    pages = (replica(db)[0], replica(db)[0])
    async with anyio.create_task_group() as group:
        for adapter in pages:
            assert adapter.relay is not None
            group.start_soon(adapter.relay.run)
            adapter.engine = page_engine(adapter, group)
        yield pages
        group.cancel_scope.cancel()


def finals(adapter: WebAdapter) -> list[str]:
    return [e.data["html"] for e in adapter.timeline(OWNER).events() if e.kind == "final"]


@pytest.mark.parametrize("written", [True, False], ids=["written, then died", "died first"])
async def test_a_final_taken_over_by_another_replica_is_shown_once(
    page: tuple[WebAdapter, WebAdapter], written: bool
) -> None:
    first, second = page
    journal = Journal(hang="confirm" if written else "save")
    with anyio.fail_after(20):
        await first.deliver_final(OWNER, FINAL, journal, ends_turn=False)
        while "key" not in journal.progress or (written and not finals(first)):
            await anyio.sleep(0.02)
        # The first replica is gone: its row (and its journal) is taken over.
        again = Journal(journal.progress)
        assert second.engine is not None
        await second.deliver_final(OWNER, FINAL, again, ends_turn=False)
        await again.confirmed.wait()
        assert second.relay is not None
        await second.relay.catch_up(OWNER)  # the store's events, as a tab opening now
    assert finals(second) == ["<p>The answer.</p>\n"]


async def test_a_late_final_from_a_stalled_replica_is_refused_by_the_store(
    db: PgDatabase,
) -> None:
    """The first replica stalls (SIGSTOP) with its final queued, unwritten; the second
    takes the row over and writes the final; the first wakes and writes its queued copy:
    the store keeps one (a unique key per conversation and final key)."""
    stalled, _ = replica(db)
    second, _ = replica(db)
    assert stalled.relay is not None
    assert second.relay is not None
    journal = Journal()
    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:
            stalled.engine = page_engine(stalled, group)  # its relay's writer stands still
            second.engine = page_engine(second, group)
            group.start_soon(second.relay.run)
            await stalled.deliver_final(OWNER, FINAL, journal, ends_turn=False)
            while "key" not in journal.progress:
                await anyio.sleep(0.02)
            again = Journal(journal.progress)
            await second.deliver_final(OWNER, FINAL, again, ends_turn=False)
            await again.confirmed.wait()
            group.start_soon(stalled.relay.run)  # it wakes, its queue still holding the final
            await journal.confirmed.wait()
            group.cancel_scope.cancel()
    opened, relay = replica(db)
    await relay.catch_up(OWNER)  # a tab opening now, on a third replica
    assert finals(opened) == ["<p>The answer.</p>\n"]


class Streaming(PgPageEvents):
    """The store of a replica where other conversations stream on: each partial written
    queues the next one, so the relay's queue never empties while ``on``."""

    def __init__(self, db: PgDatabase) -> None:
        super().__init__(db)
        self.relay: Relay | None = None
        self.on = True

    async def append(
        self, conversation: str, kind: str, data: Mapping[str, Any], turn: str | None, keep: int
    ) -> int:
        if self.on and self.relay is not None and kind == "partial":
            self.relay.publish(ConversationId(conversation), "partial", dict(data), turn)
        return await super().append(conversation, kind, data, turn, keep)


async def test_a_final_is_confirmed_while_other_conversations_stream(db: PgDatabase) -> None:
    """The final's send returns once its own event is written, not once the relay's
    queue is empty (it never is while ten conversations stream), so its row is
    confirmed and what follows it in its conversation is shown."""
    store = Streaming(db)
    adapter = WebAdapter(
        ChannelId("web"), flush_interval=0.05, keep_events=50, seats=SEATS, store=store
    )
    relay = store.relay = adapter.relay
    journal = Journal()
    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:
            adapter.engine = page_engine(adapter, group)
            group.start_soon(relay.run)
            for n in range(10):
                other = ConversationId(f"other-{n}")
                await adapter.deliver(other, TurnStarted())
                await adapter.deliver(other, TextUpdate("streaming"))
            await adapter.deliver_final(OWNER, FINAL, journal, ends_turn=False)
            await journal.confirmed.wait()
            await adapter.deliver(OWNER, Notice("after the answer"))  # not held back
            streamed = store.on
            store.on = False
            group.cancel_scope.cancel()
    assert streamed, "the others still streamed when the final was confirmed"


async def test_a_final_taken_over_closes_the_turn_its_replica_opened(
    page: tuple[WebAdapter, WebAdapter], db: PgDatabase
) -> None:
    """The first replica streamed a turn and died before appending its final: the
    replica that takes the row over appends it under that turn, so the page's partial
    bubble becomes the answer instead of staying open beside it."""
    first, second = page
    journal = Journal(hang="save")
    with anyio.fail_after(20):
        async with anyio.create_task_group() as killed:
            await first.deliver(OWNER, TurnStarted())
            await first.deliver(OWNER, TextUpdate("The ans"))
            # Its first note hangs (the replica dies there): the row's state is that note.
            killed.start_soon(partial(first.deliver_final, OWNER, FINAL, journal, ends_turn=True))
            while not journal.progress:
                await anyio.sleep(0.02)
            killed.cancel_scope.cancel()
        assert first.relay is not None
        await first.relay.written()
        again = Journal(journal.progress)
        await second.deliver_final(OWNER, FINAL, again, ends_turn=False)
        await again.confirmed.wait()
        opened, relay = replica(db)
        await relay.catch_up(OWNER)  # a tab opening now, on a third replica
    events = opened.timeline(OWNER).events()
    assert [e.kind for e in events] == ["turn", "final"], "no partial left open"
    assert events[1].turn == events[0].data["turn"]
