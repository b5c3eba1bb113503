"""A new owner of the connection runs the owner-only rows the dead owner left (Matrix's
encrypted rooms) as soon as it takes the connection, not at the drain's next sweep, on a
real PostgreSQL. The sweep runs every half lease: the lease here is an hour, so a row
handed over within the test's guard was handed over by the takeover's own look."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from tests.cluster.test_anywhere_store import said
from tests.cluster.unsent import unsent_pair
from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.ports import InboundMessage
from thalos_bot.cluster.connections import ConnectionLease
from thalos_bot.cluster.seen_lanes import SeenInbox, SeenLeaseBook
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
