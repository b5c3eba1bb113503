"""A replica's inbox drain stopped at the worst moment, on a real PostgreSQL.

The worst moment is a commit done on the server whose answer has not reached the
replica yet: the stop must not leave behind what that commit did."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import anyio
import pytest

from thalos_bot.cluster.drain import InboxDrain
from thalos_bot.cluster.inbox import Inbox
from thalos_bot.cluster.leases import Lease, LeaseBook
from thalos_bot.cluster.replicas import ReplicaTable
from thalos_bot.storage.pg.database import PgDatabase

pytestmark = pytest.mark.anyio
CHANNEL = "telegram"
BOT = 123456


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PgDatabase]:
    async with await PgDatabase.open(postgres_url) as opened:
        yield opened


class SlowAnswers(LeaseBook):
    """Each take's commit is done on the server, and its answer is late."""

    def __init__(self, db: PgDatabase) -> None:
        super().__init__(db, CHANNEL, "replica-a", 15)
        self.committed = anyio.Event()

    async def take(self, lease: Lease, update_id: int, bot: int) -> bool:
        taken = await super().take(lease, update_id, bot)
        self.committed.set()
        await anyio.sleep(0.5)  # the answer on its way while the replica stops
        return taken


async def test_a_stop_while_a_take_commits_puts_the_row_back_for_the_next_holder(
    db: PgDatabase, postgres_url: str
) -> None:
    inbox = Inbox(db, BOT)
    book = SlowAnswers(db)
    handed: list[int] = []
    interrupted: list[str] = []

    def read(update_id: int, payload: Mapping[str, Any]) -> int:
        return update_id

    def hand_over(items: Sequence[int]) -> None:
        handed.extend(items)

    drain: InboxDrain[int] = InboxDrain(
        url=postgres_url,
        inbox=inbox,
        leases=book,
        replicas=ReplicaTable(db, "replica-a", 15),
        read=read,
        hand_over=hand_over,
        interrupted=interrupted.append,
        lease_seconds=15,
    )
    with anyio.fail_after(30):
        async with anyio.create_task_group() as group, drain.running(group):
            await drain.listening.wait()
            await inbox.put(7001, "42", {"update_id": 7001})
            await book.committed.wait()
            # The block's end stops the taking (and the heartbeat) and leaves.
    assert handed == [7001], "the take ended (and was handed over) before the stop went on"
    other = LeaseBook(db, CHANNEL, "replica-b", 15)
    taken = await other.acquire("42")
    assert taken is not None, "the stopping replica released the lane"
    assert taken.interrupted is None, "no turn was begun: nothing may be called interrupted"
    assert [row.update_id for row in await inbox.waiting("42")] == [7001], "put back"
    assert interrupted == []
