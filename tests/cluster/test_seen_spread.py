"""New conversations spread over the replicas that send, on a real PostgreSQL: the wait
before a replica tries a conversation it does not hold, and no wait while it is the
only replica sending (the replicas table, as its heartbeat reads it)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from tests.cluster.unsent import unsent_pair
from tests.waits import until
from thalos_bot.cluster.seen_lanes import STAND_BY, SeenLeaseBook
from thalos_bot.service.anywhere import Anywhere
from thalos_bot.service.schema import PG_ALL_MIGRATIONS
from thalos_bot.storage.pg.database import PgDatabase

pytestmark = pytest.mark.anyio
CHANNEL = "slack"
LEASE = 0.6
"""connection_lease, seconds: a heartbeat every 0.2 s."""


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PgDatabase]:
    async with await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS) as opened:
        yield opened


def test_a_new_conversation_goes_at_once_to_the_first_in_its_order() -> None:
    """Every replica reckons the same order of the senders for a conversation (the
    connection's owner last): the first takes it at once, each other one a step later
    per place (in case those before it died); nobody waits while it sends alone."""
    names = ["replica-a", "replica-b", "replica-c"]
    books = [SeenLeaseBook(None, CHANNEL, name, 15) for name in names]  # type: ignore[arg-type]
    for book in books:
        assert book.alone, "until a heartbeat says otherwise, as the drain's rate share"
        assert book.wait_before("D1") == 0.0, "nobody to spread to: taken at once"
        book.alone, book.senders, book.owner = False, tuple(names), "replica-a"
    firsts: dict[str, int] = {}
    for n in range(60):
        lane = f"D{n}"
        order = books[0].order(lane)
        assert all(book.order(lane) == order for book in books), "one order for all"
        assert order[-1] == "replica-a", "the owner last"
        waits = sorted((book.wait_before(lane), book.replica) for book in books)
        assert [wait for wait, _ in waits] == [0.0, STAND_BY, 2 * STAND_BY]
        assert [name for _, name in waits] == order
        firsts[order[0]] = firsts.get(order[0], 0) + 1
    assert set(firsts) == {"replica-b", "replica-c"}, firsts
    assert min(firsts.values()) >= 15, f"spread evenly: {firsts}"
    newcomer = SeenLeaseBook(None, CHANNEL, "replica-d", 15)  # type: ignore[arg-type]
    newcomer.alone, newcomer.senders = False, tuple(names)
    assert newcomer.wait_before("D1") == 3 * STAND_BY, "not heard of yet: after all"


async def test_a_replica_knows_whether_another_sends(db: PgDatabase, postgres_url: str) -> None:
    async with anyio.create_task_group() as group:

        def replica(name: str) -> Anywhere:
            return Anywhere(db, postgres_url, unsent_pair(CHANNEL, group), name, LEASE)

        first, second = replica("replica-a"), replica("replica-b")
        try:
            async with first.running():
                async with second.running():
                    await until(lambda: not first.book.alone and not second.book.alone)
                    both = {"replica-a", "replica-b"}
                    await until(lambda: set(first.book.senders) == set(second.book.senders) == both)
                await until(lambda: first.book.alone)  # the other left the replicas table
        finally:
            first.inlet.close()
            second.inlet.close()
        group.cancel_scope.cancel()
