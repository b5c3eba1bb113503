"""Owner-only rows of a connection channel's inbox, on a real PostgreSQL (Matrix's
encrypted rooms: only the holder of the connection lease can encrypt their answers).
Only a replica holding the connection sees such a row, takes its lane, takes the row,
and keeps its turn; one that holds the lane without the connection lets it go at its
next renewal, and the owner runs the row again. A replica's connection is its
``connection_leases`` row; losing it is made by ending that lease in the database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import anyio
import pytest

from tests.cluster.test_anywhere_store import commit, said
from tests.subagents.conftest import ALICE
from thalos_bot.cluster.connections import ConnectionLease
from thalos_bot.cluster.leases import FenceSlot
from thalos_bot.cluster.outbox_claims import ClaimingOutbox
from thalos_bot.cluster.seen_lanes import SeenFence, SeenInbox, SeenLeaseBook
from thalos_bot.domain.address import Address
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.schedules.scheduler import LEFT_TO_ANOTHER, Scheduler
from thalos_bot.schedules.store import NewSchedule
from thalos_bot.service.schema import PG_ALL_MIGRATIONS
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.pg.schedules import PgScheduleStore
from thalos_bot.storage.protocol import OutboxAddress, OutboxEntry

pytestmark = pytest.mark.anyio


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PgDatabase]:
    async with await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS) as opened:
        yield opened


class Replica:
    def __init__(self, db: PgDatabase, name: str) -> None:
        self.connection = ConnectionLease(db, "slack", name, 30.0)
        self.book = SeenLeaseBook(db, "slack", name, 30.0)
        self.book.owns = self.connection.fresh
        self.inbox = SeenInbox(db, "slack", self.book.held, self.book)
        self.fence = FenceSlot()
        self.fence.connections["slack"] = SeenFence(self.book)


async def lose_connection(db: PgDatabase) -> None:
    async with db.transaction() as conn:
        await conn.execute("UPDATE connection_leases SET expires_at = now()")


async def test_only_the_connections_owner_sees_takes_and_keeps_an_owner_only_row(
    db: PgDatabase,
) -> None:
    owner, other = Replica(db, "a"), Replica(db, "b")
    assert await owner.connection.acquire()
    assert await owner.inbox.put("!e", "1", said("sealed", "!e"), owner_only=True)
    await owner.inbox.put("!p", "2", said("plain", "!p"))
    assert await other.inbox.lanes_waiting() == ["!p"]
    assert await other.book.acquire("!e") is None  # nobody holds it: still not for it
    assert "!e" not in other.book.held
    assert sorted(await owner.inbox.lanes_waiting()) == ["!e", "!p"]
    lease = await owner.book.acquire("!e")
    assert lease is not None
    [row] = await owner.inbox.waiting("!e")
    assert await owner.book.take(lease, row.update_id, 0)
    assert await commit(db, owner.fence, "!e")
    assert await owner.inbox.lanes_waiting() == ["!p"]


async def test_an_owner_that_lost_the_connection_mid_turn_is_refused_and_lets_the_lane_go(
    db: PgDatabase,
) -> None:
    first, second = Replica(db, "a"), Replica(db, "b")
    assert await first.connection.acquire()
    await first.inbox.put("!e", "1", said("sealed", "!e"), owner_only=True)
    lease = await first.book.acquire("!e")
    assert lease is not None
    [row] = await first.inbox.waiting("!e")
    assert await first.book.take(lease, row.update_id, 0)
    await lose_connection(db)
    assert await second.connection.acquire()  # the takeover
    assert not await commit(db, first.fence, "!e")  # its keys are the new owner's now
    first.connection.token = None  # its standby found the lease lost
    assert await second.book.acquire("!e") is None  # the old owner's lease still runs
    assert await first.book.renew() == {"!e"}  # let go: the drain fences its deliveries
    taken = await second.book.acquire("!e")
    assert taken is not None
    [again] = await second.inbox.waiting("!e")
    assert again.update_id == row.update_id
    assert await second.book.take(taken, again.update_id, 0)
    assert await commit(db, second.fence, "!e")
    assert await second.inbox.lanes_waiting() == []


async def test_a_replica_without_the_connection_takes_no_owner_only_row_of_a_lane_it_holds(
    db: PgDatabase,
) -> None:
    """It held the room's lane for an unencrypted message; then the room was encrypted.
    Its own clock may still say it owns the connection: the database decides."""
    owner, other = Replica(db, "a"), Replica(db, "b")
    assert await owner.connection.acquire()
    await owner.inbox.put("!r", "1", said("plain", "!r"))
    lease = await other.book.acquire("!r")
    assert lease is not None
    [plain] = await other.inbox.waiting("!r")
    assert await other.book.take(lease, plain.update_id, 0)
    assert await commit(db, other.fence, "!r")
    await owner.inbox.put("!r", "2", said("sealed", "!r"), owner_only=True)
    assert await other.inbox.waiting("!r") == []
    other.book.owns = lambda: True  # a stale belief
    [sealed] = await other.inbox.waiting("!r")
    assert not await other.book.take(lease, sealed.update_id, 0)
    other.book.owns = other.connection.fresh
    assert await other.book.renew() == {"!r"}
    assert "!r" not in other.book.held
    mine = await owner.book.acquire("!r")
    assert mine is not None
    assert await owner.book.take(mine, sealed.update_id, 0)
    assert await commit(db, owner.fence, "!r")


async def test_a_turn_across_a_connection_closed_and_opened_again_is_refused_and_run_again(
    db: PgDatabase,
) -> None:
    """The same replica keeps the connection, under a new token (a renewal overdue by
    its own clock closed it): the sends made while it was closed were refused, so the
    turn from before is not kept; its lane is let go and the row runs again."""
    owner = Replica(db, "a")
    assert await owner.connection.acquire()
    await owner.inbox.put("!e", "1", said("sealed", "!e"), owner_only=True)
    lease = await owner.book.acquire("!e")
    assert lease is not None
    [row] = await owner.inbox.waiting("!e")
    assert await owner.book.take(lease, row.update_id, 0)
    assert await owner.connection.acquire()  # opened again: a new token
    assert not await commit(db, owner.fence, "!e")
    assert await owner.book.renew() == {"!e"}
    again = await owner.book.acquire("!e")
    assert again is not None
    assert again.token != lease.token
    [retaken] = await owner.inbox.waiting("!e")
    assert await owner.book.take(again, retaken.update_id, 0)
    assert await commit(db, owner.fence, "!e")
    assert await owner.inbox.lanes_waiting() == []


async def test_an_owner_only_conversations_final_is_claimed_by_the_connections_owner_only(
    db: PgDatabase,
) -> None:
    """A final left behind in an encrypted room (its writer died after the commit, or a
    schedule's) is delivered only by the replica holding the connection: another
    replica's sweep would be refused the send and drop it."""
    owner = Replica(db, "a")
    assert await owner.connection.acquire()
    await owner.inbox.put("!e", "1", said("sealed", "!e"), owner_only=True)
    await owner.inbox.put("!p", "2", said("plain", "!p"))
    writer = ClaimingOutbox(db, "writer", span=30)
    for room in ("!e", "!p"):
        address = OutboxAddress(ChannelId("slack"), ConversationId(room), f"out{room}")
        await writer.add(OutboxEntry(address, "final"), datetime.now(UTC))
    async with db.transaction() as conn:  # past the writer's head start
        await conn.execute("UPDATE outbox SET created_at = now() - interval '1 minute'")
    claims = {name: ClaimingOutbox(db, name, span=30) for name in ("b", "a")}
    assert [r.id for r in await claims["b"].pending(ChannelId("slack"))] == ["out!p"]
    assert [r.id for r in await claims["a"].pending(ChannelId("slack"))] == ["out!e"]


async def test_a_plain_turn_running_when_the_room_is_encrypted_finishes_before_the_lane_goes(
    db: PgDatabase,
) -> None:
    """Letting the lane go mid-turn would refuse the plain turn's commit and run its
    message again on the owner (its tools twice): it is let go once that turn is kept."""
    owner, other = Replica(db, "a"), Replica(db, "b")
    assert await owner.connection.acquire()
    await owner.inbox.put("!r", "1", said("plain", "!r"))
    lease = await other.book.acquire("!r")
    assert lease is not None
    [plain] = await other.inbox.waiting("!r")
    assert await other.book.take(lease, plain.update_id, 0)
    await owner.inbox.put("!r", "2", said("sealed", "!r"), owner_only=True)
    assert await other.book.renew() == set(), "its plain turn still runs"
    assert "!r" in other.book.held
    assert await commit(db, other.fence, "!r")
    assert await other.book.renew() == {"!r"}
    mine = await owner.book.acquire("!r")
    assert mine is not None
    [sealed] = await owner.inbox.waiting("!r")
    assert await owner.book.take(mine, sealed.update_id, 0)


async def test_an_owner_only_conversations_schedule_is_claimed_by_the_connections_owner_only(
    db: PgDatabase,
) -> None:
    """A schedule answering in an encrypted room runs where its answer can be sealed;
    a plain room's runs on whichever replica claims it first."""
    owner = Replica(db, "a")
    assert await owner.connection.acquire()
    await owner.inbox.put("!e", "1", said("sealed", "!e"), owner_only=True)
    made = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)
    for room in ("!e", "!p"):
        chat = Address(ChannelId("slack"), ConversationId(room))
        await PgScheduleStore(db).create(
            NewSchedule(ALICE, "researcher", f"in {room}", chat, cron="0 9 * * *"), made
        )
    due = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
    other = await PgScheduleStore(db, "b").claim_due(due)
    assert [s.deliver_to.conversation_id for s in other] == ["!p"]
    mine = await PgScheduleStore(db, "a").claim_due(due)
    assert [s.deliver_to.conversation_id for s in mine] == ["!e"]


async def test_a_scheduler_left_a_due_schedule_by_the_store_looks_again_soon_not_at_once() -> None:
    """Another replica's to claim (or the connection's holder's): no busy loop."""

    class LeftToAnother:
        async def claim_due(self, now: datetime, channels: object) -> list[object]:
            return []

        async def next_due(self, channels: object) -> datetime:
            return datetime(2026, 6, 1, 9, 0, tzinfo=UTC)

    scheduler = Scheduler(
        LeftToAnother(),  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        clock=lambda: datetime(2026, 6, 1, 9, 0, 5, tzinfo=UTC),
    )
    async with anyio.create_task_group() as runs:
        assert await scheduler._step(runs) == LEFT_TO_ANOTHER
