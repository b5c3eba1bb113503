"""Turns run by any replica, on a real PostgreSQL: the connection channel's inbox as
lanes (one per conversation), taken under the conversation lease's token and done in
the turn's commit; a dead runner's row taken again by the next holder, its late commit
refused; the senders' share of the rate and their 429 waits announced. A dead holder
is made by ending its lease in the database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import anyio
import pytest

from thalos_bot.channels.inbound_codec import encode
from thalos_bot.channels.ports import InboundMessage, Sender
from thalos_bot.cluster import connection_holds
from thalos_bot.cluster.connection_holds import ConnectionHolds
from thalos_bot.cluster.leases import FenceSlot
from thalos_bot.cluster.replicas import ReplicaTable
from thalos_bot.cluster.seen_lanes import SeenFence, SeenInbox, SeenLeaseBook, notify_channel
from thalos_bot.domain.ids import ChannelId, ConversationId, SessionId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.service.schema import PG_ALL_MIGRATIONS
from thalos_bot.storage.pg.database import PgDatabase, listening
from thalos_bot.storage.protocol import OutboxAddress

pytestmark = pytest.mark.anyio


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PgDatabase]:
    async with await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS) as opened:
        yield opened


def said(text: str, conversation: str = "D1") -> dict[str, object]:
    return encode(
        InboundMessage(
            ChannelId("slack"),
            ConversationId(conversation),
            Sender(SecurityContext.of("u"), "U", "U1"),
            text,
            datetime(2026, 12, 6, tzinfo=UTC),
            message_ref=text,
        )
    )


def replica(db: PgDatabase, name: str) -> tuple[SeenLeaseBook, SeenInbox, FenceSlot]:
    book = SeenLeaseBook(db, "slack", name, 30.0)
    fence = FenceSlot()
    fence.connections["slack"] = SeenFence(book)
    return book, SeenInbox(db, "slack", book.held), fence


async def commit(db: PgDatabase, fence: FenceSlot, conversation: str = "D1") -> bool:
    address = OutboxAddress(ChannelId("slack"), ConversationId(conversation), "k")
    async with db.transaction() as conn:
        return await fence.admit(conn, SessionId("s1"), address)


async def die(db: PgDatabase) -> None:
    async with db.transaction() as conn:
        await conn.execute("UPDATE conversation_leases SET expires_at = now()")


async def test_a_row_is_stored_once_and_announced(db: PgDatabase, postgres_url: str) -> None:
    _, inbox, _ = replica(db, "a")
    async with listening(postgres_url, notify_channel("slack")) as conn:
        assert await inbox.put("D1", "1", said("m1"))
        assert not await inbox.put("D1", "1", said("m1"))  # a redelivery
        heard = []
        with anyio.move_on_after(5):
            async for note in conn.notifies():
                heard.append(note.payload)
                break
    assert heard == ["0:D1"]
    assert await inbox.lanes_waiting() == ["D1"]


async def test_the_holder_runs_a_conversation_in_order_and_its_commit_finishes_the_row(
    db: PgDatabase,
) -> None:
    book, inbox, fence = replica(db, "a")
    for ref in ("1", "2"):
        await inbox.put("D1", ref, said(ref))
    lease = await book.acquire("D1")
    assert lease is not None
    rows = await inbox.waiting("D1")
    assert [row.payload["text"] for row in rows] == ["1", "2"]
    assert [await book.take(lease, row.update_id, 0) for row in rows] == [True, True]
    assert await inbox.waiting("D1") == []  # taken under this token: not again
    assert await commit(db, fence)  # the turn answering "1"
    await book.done("D1", rows[1].update_id, lease.token)  # "2" was a command
    assert await inbox.lanes_waiting() == []
    assert await commit(db, fence, "D2")  # nothing taken there (a schedule's turn)


async def test_a_dead_runners_row_runs_again_on_the_next_holder_and_its_commit_is_refused(
    db: PgDatabase,
) -> None:
    first, inbox, fence_a = replica(db, "a")
    second, inbox_b, fence_b = replica(db, "b")
    await inbox.put("D1", "1", said("m1"))
    lease = await first.acquire("D1")
    assert lease is not None
    [row] = await inbox.waiting("D1")
    assert await first.take(lease, row.update_id, 0)
    assert await second.acquire("D1") is None  # a live holder keeps it
    await die(db)  # the runner was killed, or stalled past its lease
    taken = await second.acquire("D1")
    assert taken is not None
    [again] = await inbox_b.waiting("D1")
    assert again.update_id == row.update_id
    assert await second.take(taken, again.update_id, 0)
    assert not await first.take(lease, row.update_id, 0)  # a stale token takes nothing
    assert not await commit(db, fence_a)  # the stalled runner's late commit
    await first.done("D1", row.update_id, lease.token)  # its end changes nothing
    assert await inbox_b.lanes_waiting() == ["D1"]
    assert await commit(db, fence_b)
    assert await inbox_b.lanes_waiting() == []


async def test_a_runner_that_took_its_lane_back_refuses_its_turn_from_before(
    db: PgDatabase,
) -> None:
    """(seq, token): the same row taken again by the same replica under a new token."""
    book, inbox, fence = replica(db, "a")
    await inbox.put("D1", "1", said("m1"))
    old = await book.acquire("D1")
    assert old is not None
    [row] = await inbox.waiting("D1")
    assert await book.take(old, row.update_id, 0)
    await die(db)
    book.held.clear()  # the renewal found it lost
    new = await book.acquire("D1")
    assert new is not None
    assert new.token != old.token
    [again] = await inbox.waiting("D1")
    assert await book.take(new, again.update_id, 0)
    assert not await commit(db, fence)  # the turn from before the stall
    assert await commit(db, fence)  # the run under the new token
    assert await inbox.lanes_waiting() == []


async def test_the_senders_share_their_channels_rate_and_do_not_count_for_telegram(
    db: PgDatabase,
) -> None:
    senders = [ReplicaTable(db, f"r{n}/slack", alive=15) for n in range(3)]
    for table in senders:
        await table.beat("slack-send")
    await ReplicaTable(db, "r0/discord", alive=15).beat("discord-send")
    assert await senders[0].share(30.0, "slack-send") == 10.0
    poller = ReplicaTable(db, "telegram-poller", alive=15)
    assert await poller.others() == []  # a sender takes no Telegram updates


async def test_a_wait_is_announced_to_every_replica(db: PgDatabase, postgres_url: str) -> None:
    holds = ConnectionHolds(db, "slack")
    async with listening(postgres_url, connection_holds.channel_of("slack")) as conn:
        left = await holds.hold("D1", 10.0)
        heard = None
        with anyio.move_on_after(5):
            async for note in conn.notifies():
                heard = connection_holds.parse(note.payload)
                break
    assert heard is not None
    assert heard[0] == "D1"
    assert 9.0 < heard[1] <= left <= 10.0
    assert connection_holds.parse("soon D1") is None
