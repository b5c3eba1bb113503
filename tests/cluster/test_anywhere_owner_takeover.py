"""A new owner of the connection runs the owner-only rows the dead owner left (Matrix's
encrypted rooms) as soon as it takes the connection, and the owner runs a room another
replica lets go (it held it for a plain message, then the room was encrypted) as soon
as it is let go: not at the drain's next sweep, on a real PostgreSQL. The sweep runs
every half lease: the lease here is an hour, so a row handed over within the test's
guard was handed over by the takeover's own look, or the let-go's announcement."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import anyio
import pytest

from tests.cluster.test_anywhere_store import commit, said
from tests.cluster.unsent import unsent_pair
from thalos_bot.channels.inbound_codec import decode
from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.ports import InboundMessage
from thalos_bot.cluster.connections import ConnectionLease
from thalos_bot.cluster.leases import FenceSlot, Lease
from thalos_bot.cluster.seen_lanes import SeenFence, SeenInbox, SeenLeaseBook
from thalos_bot.service.anywhere import Anywhere
from thalos_bot.service.schema import PG_ALL_MIGRATIONS
from thalos_bot.storage.pg.database import PgDatabase

pytestmark = pytest.mark.anyio
CHANNEL = "slack"
LEASE = 3600.0
"""connection_lease, seconds: the drain's sweep (every half lease) never runs here."""
GUARD = 30
"""Seconds before a test that hangs (nothing handed over) fails."""


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PgDatabase]:
    async with await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS) as opened:
        yield opened


async def dead_owner_left_a_sealed_row(db: PgDatabase, lane_left_for: str) -> int:
    """Replica ``a`` held the connection and the room, took its owner-only row and was
    killed: its connection lease has run out, its room's lease runs out in
    ``lane_left_for`` (an interval). The row's seq."""
    connection = ConnectionLease(db, CHANNEL, "a", LEASE)
    assert await connection.acquire()
    book = SeenLeaseBook(db, CHANNEL, "a", LEASE)
    book.owns = connection.fresh
    inbox = SeenInbox(db, CHANNEL, book.held, book)
    assert await inbox.put("!e", "sealed", said("sealed", "!e"), owner_only=True)
    lease = await book.acquire("!e")
    assert lease is not None
    [row] = await inbox.waiting("!e")
    assert await book.take(lease, row.update_id, 0)
    async with db.transaction() as conn:
        await conn.execute("UPDATE connection_leases SET expires_at = now()")
        await conn.execute(
            "UPDATE conversation_leases SET expires_at = now() + %s::interval",
            (lane_left_for,),
        )
    return row.update_id


async def first_message(inlet: Inlet) -> InboundMessage:
    with anyio.fail_after(GUARD):
        async for arrival in inlet.messages():
            if isinstance(arrival, InboundMessage):
                return arrival
    raise AssertionError("the inlet closed")


@pytest.mark.parametrize("lane_left_for", ["0 seconds", "1 second"])
async def test_the_new_owner_runs_a_sealed_row_the_dead_owner_left_at_once(
    db: PgDatabase, postgres_url: str, lane_left_for: str
) -> None:
    """With the room's lease free at the takeover, and with it still running for a
    second (the dead owner renewed the room after the connection): the new owner
    runs the row then, not half an hour later."""
    seq = await dead_owner_left_a_sealed_row(db, lane_left_for)
    connection = ConnectionLease(db, CHANNEL, "b", LEASE)
    async with anyio.create_task_group() as group:
        anywhere = Anywhere(db, postgres_url, unsent_pair(CHANNEL, group), "b", LEASE)
        anywhere.book.owns = connection.fresh  # as the Standby sets it
        try:
            async with anywhere.running():
                assert anywhere.drain is not None
                with anyio.fail_after(GUARD):
                    await anywhere.drain.listening.wait()  # its first look came and went
                assert await connection.acquire()  # the takeover
                anywhere.connection_taken()  # as the Standby does once it is open
                message = await first_message(anywhere.inlet)
                assert message.text == "sealed"
                assert anywhere.book.held.get("!e") is not None
                assert [row for row, _ in anywhere.book.taken.rows["!e"]] == [seq]
        finally:
            anywhere.inlet.close()
        group.cancel_scope.cancel()


async def test_the_owner_runs_a_room_another_replica_lets_go_at_once(
    db: PgDatabase, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replica ``b`` (no connection) holds the room for a plain message it answered;
    the room is then encrypted. The owner ``a`` hears of the sealed message and leaves
    it (``b`` holds the room); ``b`` lets the room go at its renewal, and ``a`` runs
    the row then."""
    other = SeenLeaseBook(db, CHANNEL, "b", LEASE)
    other_inbox = SeenInbox(db, CHANNEL, other.held, other)
    fence = FenceSlot()
    fence.connections[CHANNEL] = SeenFence(other)
    assert await other_inbox.put("!r", "plain", said("plain", "!r"))
    room = await other.acquire("!r")
    assert room is not None
    [plain] = await other_inbox.waiting("!r")
    assert await other.take(room, plain.update_id, 0)
    assert await commit(db, fence, "!r")
    connection = ConnectionLease(db, CHANNEL, "a", LEASE)
    assert await connection.acquire()
    async with anyio.create_task_group() as group:
        anywhere = Anywhere(db, postgres_url, unsent_pair(CHANNEL, group), "a", LEASE)
        anywhere.book.owns = connection.fresh  # as the Standby sets it
        tried: list[Lease | None] = []
        acquire = anywhere.book.acquire

        async def trying(lane: str) -> Lease | None:
            tried.append(await acquire(lane))
            return tried[-1]

        monkeypatch.setattr(anywhere.book, "acquire", trying)
        try:
            async with anywhere.running():
                assert anywhere.drain is not None
                with anyio.fail_after(GUARD):
                    await anywhere.drain.listening.wait()
                    assert await anywhere.store(sealed_in("!r"))
                    while not tried:
                        await anyio.sleep(0.05)
                assert tried == [None], "b holds the room: a leaves it"
                assert await other.renew() == {"!r"}  # let go
                message = await first_message(anywhere.inlet)
                assert message.text == "sealed"
                assert anywhere.book.held.get("!r") is not None
        finally:
            anywhere.inlet.close()
        group.cancel_scope.cancel()


def sealed_in(room: str) -> InboundMessage:
    """The owner's connection received a message of the encrypted ``room``."""
    return replace(decode(said("sealed", room)), owner_only=True)
