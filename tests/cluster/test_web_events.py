"""A web page's events through the shared store, on a real PostgreSQL, with two web
adapters standing for two replicas: a turn answered on one appears on the other with
the same ids, a stream that resumes on the other after the last id it saw gets the rest
once (no gap, no repeat), a replica started later loads what is kept, and the partials
of a finished turn are not kept in the store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
import pytest

from tests.web.seats import owner_seats
from thalos_bot.channels.approvals.asking import RELAYED
from thalos_bot.channels.approvals.relay import Presses
from thalos_bot.channels.people import Seats
from thalos_bot.channels.ports import TextUpdate, TurnStarted
from thalos_bot.channels.running import hearing
from thalos_bot.cluster.page_events import PgPageEvents
from thalos_bot.domain.events import TokenUsage, ToolImage, TurnCompleted
from thalos_bot.domain.ids import ChannelId, ConversationId, SessionId
from thalos_bot.domain.people import People
from thalos_bot.domain.security import SecurityContext
from thalos_bot.service.press_relay import PressRelay
from thalos_bot.service.schema import PG_ALL_MIGRATIONS
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest
from thalos_bot_web.adapter import WebAdapter
from thalos_bot_web.relay import Relay
from thalos_bot_web.wire import page_engine

pytestmark = pytest.mark.anyio
OWNER = ConversationId("owner")
SEATS = owner_seats(OWNER)


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PgDatabase]:
    async with await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS) as opened:
        yield opened


def replica(db: PgDatabase, keep: int = 50, seats: Seats = SEATS) -> tuple[WebAdapter, Relay]:
    adapter = WebAdapter(
        ChannelId("web"), flush_interval=0.05, keep_events=keep, seats=seats, store=PgPageEvents(db)
    )
    return adapter, adapter.relay


@asynccontextmanager
async def answering(db: PgDatabase, url: str, *adapters: WebAdapter) -> AsyncIterator[None]:
    """Each adapter's approval presses relayed among them as the host relays a
    replica's (a :class:`PressRelay` each, listening on a connection of its own)."""
    async with anyio.create_task_group() as group:
        async with AsyncExitStack() as stack:
            for adapter in adapters:
                relay = PressRelay(db, Presses("web"), within=120.0)
                adapter.asking.presses = relay.presses
                group.start_soon(hearing, relay.presses, adapter.asking)
                await stack.enter_async_context(relay.running(listen=url))
                with anyio.fail_after(10):
                    await relay.listening.wait()
            yield
        group.cancel_scope.cancel()


async def settled(relay: Relay, adapter: WebAdapter, count: int) -> None:
    """Until ``adapter``'s timeline of the owner has ``count`` events (at most 10 s)."""
    with anyio.fail_after(10):
        while len(adapter.timeline(OWNER).events()) < count:
            await relay.read([OWNER])
            await anyio.sleep(0.02)


def completed(text: str) -> TurnCompleted:
    return TurnCompleted(SessionId("s"), text, TokenUsage(), (), 0.1)


async def test_a_turn_on_one_replica_reaches_the_page_on_another(db: PgDatabase) -> None:
    a, relay_a = replica(db)
    b, relay_b = replica(db)
    b.timeline(OWNER)  # a tab of the owner is open on b
    async with anyio.create_task_group() as group:
        a.engine = page_engine(a, group)  # the answer streams through the kit's engine
        group.start_soon(relay_a.run)
        a.said(OWNER, "hello", [])
        await a.deliver(OWNER, TurnStarted())
        await a.deliver(OWNER, TextUpdate("Hel"))
        await settled(relay_b, b, 3)
        seen = b.timeline(OWNER).events()[-1]
        assert (seen.kind, seen.id) == ("partial", "s-3")
        await a.deliver(OWNER, TextUpdate("lo"))
        await a.deliver(OWNER, completed("Hello"))
        await settled(relay_b, b, 3)
        await settled(relay_a, a, 3)
        # a's own timeline has the final once its relay read it back, which may be after
        # b read it: the relay is cancelled only once both have it.
        with anyio.fail_after(10):
            while b.timeline(OWNER).last_serial < 5 or a.timeline(OWNER).last_serial < 5:
                await relay_b.read([OWNER])
                await anyio.sleep(0.02)
        group.cancel_scope.cancel()
    on_a = [(e.id, e.kind) for e in a.timeline(OWNER).events()]
    on_b = [(e.id, e.kind) for e in b.timeline(OWNER).events()]
    assert on_a == on_b == [("s-1", "user"), ("s-2", "turn"), ("s-5", "final")]
    # The tab saw the first partial (s-3) on b and reconnects to a: the rest, once.
    reset, rest = a.timeline(OWNER).since("s-3")
    assert not reset
    assert [(e.id, e.kind) for e in rest] == [("s-5", "final")]
    # A replica started later loads what is kept: the partials are gone from the store.
    c, relay_c = replica(db)
    await relay_c.catch_up(OWNER)
    assert [(e.id, e.kind) for e in c.timeline(OWNER).events()] == on_a
    assert c.timeline(OWNER).since("s-2") == (False, c.timeline(OWNER).events()[2:])


async def test_a_page_that_saw_less_than_is_kept_starts_afresh(db: PgDatabase) -> None:
    a, relay_a = replica(db, keep=50)
    async with anyio.create_task_group() as group:
        group.start_soon(relay_a.run)
        for n in range(60):
            a.notice(OWNER, f"n{n}")
        await settled(relay_a, a, 50)
        with anyio.fail_after(10):
            while a.timeline(OWNER).last_serial < 60:
                await relay_a.read([OWNER])
                await anyio.sleep(0.02)
        group.cancel_scope.cancel()
    b, relay_b = replica(db, keep=50)
    await relay_b.catch_up(OWNER)
    events = b.timeline(OWNER).events()
    assert [e.id for e in events] == [f"s-{n}" for n in range(11, 61)]
    reset, everything = b.timeline(OWNER).since("s-5")  # older than the store keeps
    assert reset
    assert everything == events
    assert b.timeline(OWNER).since("s-58") == (False, events[-2:])


async def test_a_stopping_replica_waits_until_its_events_are_written(db: PgDatabase) -> None:
    a, relay_a = replica(db)
    async with anyio.create_task_group() as group:
        group.start_soon(relay_a.run)
        for n in range(20):
            a.notice(OWNER, f"n{n}")
        with anyio.fail_after(10):
            await relay_a.written()
        group.cancel_scope.cancel()
    kept = await PgPageEvents(db).after({str(OWNER): 0})
    assert [e.data["html"] for e in kept] == [f"n{n}" for n in range(20)]
    with anyio.fail_after(1):
        await relay_a.written()  # nothing pending: at once


async def test_a_question_asked_on_one_replica_is_answered_on_another(
    db: PgDatabase, postgres_url: str
) -> None:
    a, relay_a = replica(db)
    b, relay_b = replica(db)
    request = ApprovalRequest("memory__remember", {"text": "tea"}, SessionId("s"), "owner")
    answers: list[ApprovalAnswer] = []

    async def ask() -> None:
        answers.append(await a.ask_approval(OWNER, request))

    async with answering(db, postgres_url, a, b), anyio.create_task_group() as group:
        group.start_soon(relay_a.run)
        group.start_soon(relay_b.run)
        group.start_soon(ask)
        with anyio.fail_after(10):
            while not b.asked(OWNER, (a.asking.open_tokens() or ["-"])[0]):
                await relay_b.catch_up(OWNER)
                await anyio.sleep(0.02)
        [key] = a.asking.open_tokens()
        assert not b.asked(OWNER, "another")
        # b did not ask it: the press is relayed through the store to a, which decides.
        assert b.asking.answer(key, OWNER, key, "approved", user="owner", who="owner") == RELAYED
        with anyio.fail_after(10):
            while not answers:
                await anyio.sleep(0.02)
        # A later press changes nothing: the question is closed.
        assert b.asking.answer(key, OWNER, key, "denied", user="owner", who="owner") == RELAYED
        with anyio.fail_after(10):
            while b.asked(OWNER, key):  # closed on every page
                await relay_b.catch_up(OWNER)
                await anyio.sleep(0.02)
        group.cancel_scope.cancel()
    assert answers == [ApprovalAnswer("approved", "web:owner")]


async def guest_then_owner(a: WebAdapter, b: WebAdapter) -> list[ApprovalAnswer]:
    """``a`` asks; on ``b``'s page a login that may not answer (not the asking turn's
    person, no approver role) presses first, then the owner: what ``a``'s question got."""
    request = ApprovalRequest("memory__remember", {"text": "tea"}, SessionId("s"), "owner")
    answers: list[ApprovalAnswer] = []

    async def ask() -> None:
        answers.append(await a.ask_approval(OWNER, request))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        with anyio.fail_after(20):
            while not a.asking.open_tokens():
                await anyio.sleep(0.02)
        [key] = a.asking.open_tokens()
        guest = b.asking.answer(key, OWNER, key, "approved", user="guest", who="guest")
        owner = b.asking.answer(key, OWNER, key, "denied", user="owner", who="owner")
        assert guest == owner == RELAYED  # b cannot tell: it did not ask
        with anyio.fail_after(20):
            while not answers:
                await anyio.sleep(0.02)
    return answers


async def test_a_press_refused_on_the_asking_replica_does_not_block_the_owners(
    db: PgDatabase, postgres_url: str
) -> None:
    seats = Seats(
        "web",
        People(),
        SecurityContext.of("owner"),
        "owner",
        prefixed=False,
        allowed=("owner", "guest"),
    )
    a, relay_a = replica(db, seats=seats)
    b, relay_b = replica(db, seats=seats)
    async with answering(db, postgres_url, a, b), anyio.create_task_group() as group:
        group.start_soon(relay_a.run)
        group.start_soon(relay_b.run)
        answers = await guest_then_owner(a, b)
        group.cancel_scope.cancel()
    assert answers == [ApprovalAnswer("denied", "web:owner")]


async def test_a_tool_image_made_on_one_replica_is_served_by_another(db: PgDatabase) -> None:
    a, relay_a = replica(db)
    b, relay_b = replica(db)
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
    async with anyio.create_task_group() as group:
        group.start_soon(relay_a.run)
        a.engine = page_engine(a, group)  # a tool's image is the engine's upload
        await a.deliver(OWNER, ToolImage(SessionId("s"), "chart", "image/png", png))
        with anyio.fail_after(10):
            await relay_a.written()
        group.cancel_scope.cancel()
    await relay_b.catch_up(OWNER)
    [shown] = [e for e in b.timeline(OWNER).events() if e.kind == "image"]
    key = str(shown.data["url"]).removeprefix("/media/")
    assert await relay_b.store.media(OWNER, key) == ("image/png", png)
    assert await relay_b.store.media(ConversationId("someone"), key) is None  # never another's


class FirstFileLost(PgPageEvents):
    """The store's first file write fails (the connection dropped)."""

    failed = False

    async def keep_media(
        self, conversation: str, key: str, media_type: str, data: bytes, keep: int
    ) -> None:
        if not self.failed:
            self.failed = True
            raise OSError("connection lost")
        await super().keep_media(conversation, key, media_type, data, keep)


async def test_a_tool_image_whose_file_write_failed_is_uploaded_again(db: PgDatabase) -> None:
    """The file goes to the store before the event naming it, by the engine's upload: a
    failed write is an upload not sent, made again; the page shows the image once, and
    its file is served."""
    a, relay = replica(db)
    store = FirstFileLost(db)
    relay.store = store
    png = b"\x89PNG\r\n\x1a\n" + b"\x01" * 64
    async with anyio.create_task_group() as group:
        group.start_soon(relay.run)
        a.engine = page_engine(a, group)
        with anyio.fail_after(10):
            await a.deliver(OWNER, ToolImage(SessionId("s"), "chart", "image/png", png))
            await a.engine.outbox(OWNER).wait_empty()  # after the backoff, uploaded again
            await relay.written()
        group.cancel_scope.cancel()
    await relay.catch_up(OWNER)
    assert store.failed
    [shown] = [e for e in a.timeline(OWNER).events() if e.kind == "image"]
    assert await store.media(OWNER, str(shown.data["key"])) == ("image/png", png)
