"""Conversation leases with fencing tokens, on a real PostgreSQL.

A stalled replica is made by ending its lease in the database (the server's clock is
the only one leases read), never by sleeping past it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import anyio
import psycopg
import pytest

from tests.storage.conftest import PostgresSchema
from thalos_bot.cluster.inbox import Inbox
from thalos_bot.cluster.leases import LeaseBook
from thalos_bot.domain.errors import AgentError, ErrorCode
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.ids import AgentId, ChannelId, ConversationId, SessionId
from thalos_bot.domain.messages import Message, TextBlock
from thalos_bot.storage.pg.database import PgDatabase, fetch_all
from thalos_bot.storage.pg.sessions import PgSessionStore
from thalos_bot.storage.protocol import OutboxAddress, OutboxEntry, SessionRecord

pytestmark = pytest.mark.anyio
CHANNEL = "telegram"
BOT = 123456
NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PgDatabase]:
    async with await PgDatabase.open(postgres_url) as opened:
        yield opened


def expire(schema: PostgresSchema, lane: str) -> None:
    """The holder stalls past its lease (as far as the server's clock is concerned)."""
    schema.sql(
        "UPDATE conversation_leases SET expires_at = now() - interval '1 second'"
        f" WHERE lane = '{lane}'"
    )


async def test_one_holder_at_a_time_and_takeover_increments_the_token(
    db: PgDatabase, postgres_schema: PostgresSchema
) -> None:
    a = LeaseBook(db, CHANNEL, "replica-a", 15)
    b = LeaseBook(db, CHANNEL, "replica-b", 15)
    first = await a.acquire("42")
    assert first is not None
    assert await b.acquire("42") is None, "a live lease is never shared"
    assert await a.acquire("42") == first, "the holder keeps its token"
    expire(postgres_schema, "42")
    taken = await b.acquire("42")
    assert taken is not None
    assert taken.token == first.token + 1
    assert await a.renew() == {"42"}, "the stalled holder learns it lost the lane"
    assert "42" not in a.held


async def test_a_takeover_reports_the_turn_in_progress_once(
    db: PgDatabase, postgres_schema: PostgresSchema
) -> None:
    inbox = Inbox(db, BOT)
    await inbox.put(7001, "42", {"update_id": 7001})
    a = LeaseBook(db, CHANNEL, "replica-a", 15)
    b = LeaseBook(db, CHANNEL, "replica-b", 15)
    lease = await a.acquire("42")
    assert lease is not None
    assert await a.take(lease, 7001, BOT)
    expire(postgres_schema, "42")
    taken = await b.acquire("42")
    assert taken is not None
    assert taken.interrupted == 7001
    assert await inbox.waiting("42") == [], "the interrupted update is not run again"
    await b.release()
    again = await a.acquire("42")
    assert again is not None
    assert again.interrupted is None, "said once: the taker cleared it"


async def test_a_lane_left_mid_turn_is_found_by_the_sweep_until_taken(
    db: PgDatabase, postgres_schema: PostgresSchema
) -> None:
    inbox = Inbox(db, BOT)
    for update_id, lane in ((7001, "42"), (7002, "43"), (7003, "44")):
        await inbox.put(update_id, lane, {"update_id": update_id})
    a = LeaseBook(db, CHANNEL, "replica-a", 15)
    b = LeaseBook(db, CHANNEL, "replica-b", 15)
    for update_id, lane in ((7001, "42"), (7002, "43"), (7003, "44")):
        lease = await a.acquire(lane)
        assert lease is not None
        assert await a.take(lease, update_id, BOT)
    await a.settle("44")
    assert await b.orphaned() == [], "a live holder's turns are its own"
    expire(postgres_schema, "42")  # a's process died mid-turn
    await a.release({"43"})  # a stopped with that turn unfinished
    expire(postgres_schema, "44")  # expired, but its turn had ended
    assert await b.orphaned() == ["42", "43"]
    taken = await b.acquire("42")
    assert taken is not None
    assert taken.interrupted == 7001
    assert await b.orphaned() == ["43"], "said once: the taker cleared it"


async def test_a_settled_turn_is_not_reported_interrupted(
    db: PgDatabase, postgres_schema: PostgresSchema
) -> None:
    inbox = Inbox(db, BOT)
    await inbox.put(7001, "42", {"update_id": 7001})
    a = LeaseBook(db, CHANNEL, "replica-a", 15)
    lease = await a.acquire("42")
    assert lease is not None
    assert await a.take(lease, 7001, BOT)
    await a.settle("42")
    expire(postgres_schema, "42")
    taken = await LeaseBook(db, CHANNEL, "replica-b", 15).acquire("42")
    assert taken is not None
    assert taken.interrupted is None


async def test_an_update_taken_but_never_read_goes_back_to_the_next_holder(
    db: PgDatabase,
) -> None:
    """A clean stop between taking an update and the pump reading it (the rolling
    SIGTERM's flake): put back, it is run by the next holder, not called interrupted."""
    inbox = Inbox(db, BOT)
    await inbox.put(7001, "42", {"update_id": 7001})
    a = LeaseBook(db, CHANNEL, "replica-a", 15)
    lease = await a.acquire("42")
    assert lease is not None
    assert await a.take(lease, 7001, BOT)
    assert await inbox.waiting("42") == []
    await a.untake("42", 7001, BOT)
    await a.release()
    b = LeaseBook(db, CHANNEL, "replica-b", 15)
    taken = await b.acquire("42")
    assert taken is not None
    assert taken.interrupted is None, "not started: nothing was interrupted"
    assert [row.update_id for row in await inbox.waiting("42")] == [7001]
    assert await b.take(taken, 7001, BOT), "the next holder runs it"


async def test_a_stale_token_takes_no_update(
    db: PgDatabase, postgres_schema: PostgresSchema
) -> None:
    inbox = Inbox(db, BOT)
    await inbox.put(7001, "42", {"update_id": 7001})
    a = LeaseBook(db, CHANNEL, "replica-a", 15)
    b = LeaseBook(db, CHANNEL, "replica-b", 15)
    stale = await a.acquire("42")
    assert stale is not None
    expire(postgres_schema, "42")
    fresh = await b.acquire("42")
    assert fresh is not None
    assert not await a.take(stale, 7001, BOT)
    assert await b.take(fresh, 7001, BOT)
    assert not await b.take(fresh, 7001, BOT), "an update is taken once"


async def _session(store: PgSessionStore, sid: str) -> None:
    await store.create(SessionRecord(SessionId(sid), AgentId("helper"), "owner", "open", NOW, NOW))


def _final(conversation: str) -> OutboxEntry:
    address = OutboxAddress(ChannelId(CHANNEL), ConversationId(conversation), "k-" + conversation)
    return OutboxEntry(address, "the answer")


async def test_the_late_commit_of_a_stalled_replica_writes_neither_history_nor_final(
    db: PgDatabase, postgres_schema: PostgresSchema
) -> None:
    a = LeaseBook(db, CHANNEL, "replica-a", 15)
    b = LeaseBook(db, CHANNEL, "replica-b", 15)
    stalled = PgSessionStore(db, fence=a)
    taker = PgSessionStore(db, fence=b)
    await _session(stalled, "s1")
    assert await a.acquire("42") is not None
    expire(postgres_schema, "42")  # replica A is SIGSTOPped past its lease...
    assert await b.acquire("42") is not None  # ...and B takes the chat over
    turn = [Message.user("hello"), Message("assistant", (TextBlock("the answer"),))]
    with pytest.raises(AgentError) as refused:
        await stalled.commit_turn(SessionId("s1"), turn, TokenUsage(1, 1), NOW, outbox=_final("42"))
    assert refused.value.code is ErrorCode.SESSION_BUSY
    assert await stalled.history(SessionId("s1")) == []
    async with db.read() as conn:
        assert await fetch_all(conn, "SELECT id FROM outbox") == []
    await taker.commit_turn(SessionId("s1"), turn, TokenUsage(1, 1), NOW, outbox=_final("42"))
    assert len(await taker.history(SessionId("s1"))) == 2
    async with db.read() as conn:
        assert len(await fetch_all(conn, "SELECT id FROM outbox")) == 1


async def test_a_commit_of_an_expired_lease_is_refused_before_anyone_takes_over(
    db: PgDatabase, postgres_schema: PostgresSchema
) -> None:
    a = LeaseBook(db, CHANNEL, "replica-a", 15)
    store = PgSessionStore(db, fence=a)
    await _session(store, "s1")
    assert await a.acquire("42") is not None
    expire(postgres_schema, "42")
    with pytest.raises(AgentError):
        await store.commit_turn(
            SessionId("s1"), [Message.user("hi")], TokenUsage(1, 1), NOW, outbox=_final("42")
        )


async def test_other_channels_and_unbound_sessions_are_not_fenced(db: PgDatabase) -> None:
    a = LeaseBook(db, CHANNEL, "replica-a", 15)
    store = PgSessionStore(db, fence=a)
    await _session(store, "s1")
    console = OutboxEntry(OutboxAddress(ChannelId("console"), ConversationId("c"), "k"), "hi")
    await store.commit_turn(
        SessionId("s1"), [Message.user("a")], TokenUsage(1, 1), NOW, outbox=console
    )
    await store.commit_turn(
        SessionId("s1"), [Message("assistant", (TextBlock("b"),))], TokenUsage(1, 1), NOW
    )
    assert len(await store.history(SessionId("s1"))) == 2


async def test_released_leases_pass_at_once_and_the_inbox_is_pruned(
    db: PgDatabase, postgres_schema: PostgresSchema
) -> None:
    a = LeaseBook(db, CHANNEL, "replica-a", 15)
    b = LeaseBook(db, CHANNEL, "replica-b", 15)
    assert await a.acquire("1") is not None
    assert await a.acquire("2") is not None
    assert await a.release() == 2
    assert await b.acquire("1") is not None
    inbox = Inbox(db, BOT)
    await inbox.put(1, "1", {"update_id": 1})
    await inbox.put(2, "1", {"update_id": 2})
    postgres_schema.sql(
        "UPDATE webhook_inbox SET received_at = now() - interval '49 hours' WHERE update_id = 1"
    )
    assert await inbox.prune() == 1
    assert [r.update_id for r in await inbox.waiting("1")] == [2]


async def test_a_lane_acquired_while_a_renewal_runs_is_not_lost(
    db: PgDatabase, postgres_url: str
) -> None:
    """The renewal's statement is held on a row lock while the same replica acquires
    another lane; its answer cannot name that lane, which is still held, not lost."""
    a = LeaseBook(db, CHANNEL, "replica-a", 15)
    assert await a.acquire("1") is not None
    renewed: list[set[str]] = []

    async def renew() -> None:
        renewed.append(await a.renew())

    async with (
        await psycopg.AsyncConnection.connect(postgres_url) as blocker,
        await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as watcher,
    ):
        await blocker.execute("SELECT 1 FROM conversation_leases WHERE lane = '1' FOR UPDATE")
        async with anyio.create_task_group() as group:
            group.start_soon(renew)
            with anyio.fail_after(10):
                while not await _renewal_waits(watcher):
                    await anyio.sleep(0.01)
            assert await a.acquire("2") is not None
            await blocker.commit()  # the renewal goes on
    assert renewed == [set()], "a lane taken during the renewal was reported lost"
    assert set(a.held) == {"1", "2"}
    assert a.fresh("2")
    assert await a.renew() == set()


async def _renewal_waits(conn: psycopg.AsyncConnection[tuple[object, ...]]) -> bool:
    cursor = await conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
        " AND query LIKE 'UPDATE conversation_leases SET expires_at%'"
    )
    row = await cursor.fetchone()
    return row is not None and int(str(row[0])) > 0
