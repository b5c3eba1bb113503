"""The shared inbox of the connection channels, on a real PostgreSQL: a message stored
once whatever redelivers it, taken under the connection lease's token, done with the
commit of the turn that answers it, and run by the next owner when its owner died
before that. A dead owner is made by ending its lease in the database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from thalos_bot.channels.inbound_codec import decode, encode
from thalos_bot.channels.ports import InboundMessage, Quoted, Sender
from thalos_bot.cluster.connection_inbox import ConnectionInbox, Waiting
from thalos_bot.cluster.connections import ConnectionLease
from thalos_bot.cluster.leases import FenceSlot
from thalos_bot.domain.attachments import Attachment, Reattach
from thalos_bot.domain.ids import ChannelId, ConversationId, SessionId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.service.schema import PG_ALL_MIGRATIONS
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.protocol import OutboxAddress

pytestmark = pytest.mark.anyio


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PgDatabase]:
    async with await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS) as opened:
        yield opened


def message(text: str, ref: str) -> InboundMessage:
    return InboundMessage(
        ChannelId("discord"),
        ConversationId("dm-1"),
        Sender(SecurityContext.of("owner", ["admin"], team="blue"), "Owner", "42"),
        text,
        datetime(2026, 12, 5, 12, 0, tzinfo=UTC),
        attachments=(Attachment("image", "image/png", b"\x89PNG\x00", "a.png", "d:1"),),
        reply_to=Quoted("earlier", "assistant", cut=True),
        message_ref=ref,
        voice=True,
    )


async def owner(db: PgDatabase, replica: str) -> ConnectionInbox:
    lease = ConnectionLease(db, "discord", replica, 30.0)
    assert await lease.acquire()
    return ConnectionInbox(db, lease)


async def die(db: PgDatabase) -> None:
    async with db.transaction() as conn:
        await conn.execute("UPDATE connection_leases SET expires_at = now()")


async def commit(db: PgDatabase, fence: FenceSlot, conversation: str) -> bool:
    address = OutboxAddress(ChannelId("discord"), ConversationId(conversation), "k")
    async with db.transaction() as conn:
        return await fence.admit(conn, SessionId("s1"), address)


def test_a_message_reads_back_as_it_was_received() -> None:
    sent = message("hello", "1001")
    assert decode(encode(sent)) == sent
    bare = InboundMessage(
        ChannelId("slack"),
        ConversationId("C1"),
        Sender(SecurityContext.of("u")),
        "hi",
        datetime(2026, 1, 1, tzinfo=UTC),
        attachments=(Reattach("slack:F1"),),
    )
    assert decode(encode(bare)) == bare


async def test_a_message_is_stored_once_whatever_delivers_it_again(db: PgDatabase) -> None:
    first = await owner(db, "a")
    assert await first.put("dm-1", "1001", encode(message("hello", "1001")))
    assert not await first.put("dm-1", "1001", encode(message("hello", "1001")))
    await die(db)
    second = await owner(db, "b")  # the next owner's catch-up reads it again
    assert not await second.put("dm-1", "1001", encode(message("hello", "1001")))
    assert await second.put("dm-2", "1001", encode(message("other", "1001")))
    assert [row.conversation_id for row in await second.waiting()] == ["dm-1", "dm-2"]


async def test_a_kept_turn_finishes_its_row_and_a_dead_owners_unfinished_row_runs_again(
    db: PgDatabase,
) -> None:
    fence = FenceSlot()
    first = await owner(db, "a")
    fence.connections["discord"] = first
    for ref in ("1", "2"):
        await first.put("dm-1", ref, encode(message(f"m{ref}", ref)))
    rows = await first.waiting()
    assert [await first.take(row) is not None for row in rows] == [True, True]
    assert await first.waiting() == []  # taken here: not handed on twice
    assert await commit(db, fence, "dm-1")  # the turn answering "1" is kept
    assert await commit(db, fence, "dm-other")  # nothing taken there: not concerned

    await die(db)  # before the turn answering "2" was kept
    second = await owner(db, "b")
    [left] = await second.waiting()
    assert left.retaken
    assert decode(dict(left.payload)).text == "m2"
    assert not await commit(db, fence, "dm-1")  # the dead owner's late commit: refused
    assert await second.take(left)
    assert not await first.take(left)  # a stale token takes nothing
    fence.connections["discord"] = second
    assert await commit(db, fence, "dm-1")
    assert await second.waiting() == []


async def test_a_row_dealt_with_without_a_turn_is_done(db: PgDatabase) -> None:
    inbox = await owner(db, "a")
    await inbox.put("dm-1", "1", encode(message("/status", "1")))
    [row] = await inbox.waiting()
    taken = await inbox.take(row)
    assert taken is not None
    await inbox.done("dm-1", row.seq, taken.token)
    await die(db)
    assert await (await owner(db, "b")).waiting() == []


async def test_a_message_stored_taken_is_the_owners_at_once_and_the_next_owners_if_unkept(
    db: PgDatabase,
) -> None:
    """The owner's fast path: stored and taken in one commit, once; a stale owner's
    message is stored waiting (the next owner runs it), and its commit is refused."""
    fence = FenceSlot()
    first = await owner(db, "a")
    fence.connections["discord"] = first
    row = await first.put_taken("dm-1", "1", encode(message("m1", "1")))
    assert isinstance(row, Waiting)
    assert not row.retaken
    assert await first.put_taken("dm-1", "1", encode(message("m1", "1"))) == "seen"
    assert await first.put("dm-1", "1", encode(message("m1", "1"))) is False
    assert await first.waiting() == []  # taken here: the drain does not hand it on again
    assert isinstance(await first.put_taken("dm-1", "2", encode(message("m2", "2"))), Waiting)
    assert await commit(db, fence, "dm-1")  # the turn answering "1" is kept

    await die(db)  # before the turn answering "2" was kept
    assert await first.put_taken("dm-1", "3", encode(message("m3", "3"))) == "waiting"
    second = await owner(db, "b")
    assert [(w.retaken, decode(dict(w.payload)).text) for w in await second.waiting()] == [
        (True, "m2"),
        (False, "m3"),
    ]
    assert not await commit(db, fence, "dm-1")  # the stale owner's late commit: refused


async def test_a_message_is_not_taken_past_an_older_one_of_its_conversation(
    db: PgDatabase,
) -> None:
    inbox = await owner(db, "a")
    assert await inbox.put("dm-1", "2001", encode(message("first", "2001")))
    # The first still waits for the drain: the second waits behind it, not taken.
    assert await inbox.put_taken("dm-1", "2002", encode(message("second", "2002"))) == "waiting"
    # Another conversation has nothing older waiting: taken at once.
    other = await inbox.put_taken("dm-2", "2003", encode(message("other", "2003")))
    assert isinstance(other, Waiting)
    rows = await inbox.waiting()
    assert [(row.conversation_id, row.payload["text"]) for row in rows] == [
        ("dm-1", "first"),
        ("dm-1", "second"),
    ]
    for row in rows:
        assert await inbox.take(row)
    # Both taken by this owner: what comes next is taken at once, after them.
    third = await inbox.put_taken("dm-1", "2004", encode(message("third", "2004")))
    assert isinstance(third, Waiting)


async def test_a_turn_taken_before_the_owner_took_the_connection_back_stays_fenced(
    db: PgDatabase,
) -> None:
    """The owner stalls past its lease with a turn running, then takes the connection
    back (a new token) and takes that row again: the old turn's commit is refused, the
    new run's is kept, each matched by (seq, token). Before, re-taking the lease forgot
    the rows taken under the old token, so the old turn committed unfenced and its row
    ran a second time."""
    fence = FenceSlot()
    first = await owner(db, "a")
    fence.connections["discord"] = first
    await first.put("dm-1", "1", encode(message("m1", "1")))
    [row] = await first.waiting()
    old = await first.take(row)
    assert old is not None
    await die(db)
    assert await first.lease.acquire()  # the same replica, under a new token
    [again] = await first.waiting()
    assert again.retaken
    new = await first.take(again)
    assert new is not None
    assert new.token != old.token
    assert not await commit(db, fence, "dm-1")  # the turn from before the stall
    assert await commit(db, fence, "dm-1")  # the run under the new token
    assert await first.waiting() == []
    await first.done("dm-1", old.seq, old.token)  # the old run's end changes nothing
    assert await first.waiting() == []
