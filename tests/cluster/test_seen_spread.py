"""New conversations spread over the replicas that send, on a real PostgreSQL: the wait
before a replica tries a conversation it does not hold, and no wait while it is the
only replica sending (the replicas table, as its heartbeat reads it)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import anyio
import pytest

from thalos_bot.channels.delivery.channel import WireAdapter
from thalos_bot.channels.delivery.failure import Classified
from thalos_bot.channels.delivery.rounds import Rendering
from thalos_bot.channels.delivery.wire import Outgoing, WireLimits
from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.registry import ChannelPair
from thalos_bot.cluster.seen_lanes import YIELD_AT_MOST, YIELD_PER_LANE, SeenLeaseBook
from thalos_bot.domain.events import ToolImage, VoiceClip
from thalos_bot.domain.ids import ChannelId
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


def test_the_spread_waits_only_while_another_replica_sends() -> None:
    book = SeenLeaseBook(None, CHANNEL, "replica-a", 15)  # type: ignore[arg-type]
    book.owns = lambda: True
    book.held.update({f"D{n}": 1 for n in range(3)})
    assert book.alone, "until a heartbeat says otherwise, as the drain's rate share"
    assert book.wait_before("D9") == 0.0, "nobody to spread to: taken at once"
    book.alone = False
    assert book.wait_before("D9") == pytest.approx(3 * YIELD_PER_LANE)
    book.held.update({f"D{n}": 1 for n in range(100)})
    assert book.wait_before("D99") == YIELD_AT_MOST
    other = SeenLeaseBook(None, CHANNEL, "replica-b", 15)  # type: ignore[arg-type]
    other.alone = False
    waits = {round(other.wait_before(f"D{n}") / YIELD_PER_LANE) for n in range(30)}
    assert waits == {2, 3, 4}, "50, 75 or 100 ms by the lane: the others share the rest"
    other.alone = True
    assert other.wait_before("D1") == 0.0


class Unsent:
    """A send-only side's wire that is never called here."""

    name = CHANNEL
    limits = WireLimits(
        message_units=4000,
        caption_units=1000,
        chat_min_interval=1.0,
        global_rate=50.0,
        resend="find",
    )

    def render(self, source: str) -> str:
        return source

    def classify(self, exc: Exception) -> Classified | None:
        return None

    async def send(self, chat: str, message: Outgoing[None]) -> str:
        raise AssertionError("nothing is sent here")

    async def edit(self, chat: str, ref: str, message: Outgoing[None]) -> None:
        raise AssertionError("nothing is sent here")

    async def upload(self, chat: str, image: ToolImage | VoiceClip, caption: Outgoing[None]) -> str:
        raise AssertionError("nothing is sent here")

    async def typing(self, chat: str, thread: str | None) -> None:
        pass

    async def find(self, chat: str, key: str) -> str | None:
        return None


async def until(check: Callable[[], bool]) -> None:
    with anyio.fail_after(15):
        while not check():
            await anyio.sleep(0.05)


async def test_a_replica_knows_whether_another_sends(db: PgDatabase, postgres_url: str) -> None:
    async with anyio.create_task_group() as group:

        def replica(name: str) -> Anywhere:
            adapter: WireAdapter[str, None] = WireAdapter(
                Unsent(),
                group,
                Rendering("edit", 5.0, 1.0, 10.0),
                channel_id=ChannelId(CHANNEL),
                parse=lambda conversation: (str(conversation), None),
                private=lambda chat: True,
            )
            pair = ChannelPair(Inlet(ChannelId(CHANNEL)), adapter)
            return Anywhere(db, postgres_url, pair, name, LEASE)

        first, second = replica("replica-a"), replica("replica-b")
        try:
            async with first.running():
                async with second.running():
                    await until(lambda: not first.book.alone and not second.book.alone)
                await until(lambda: first.book.alone)  # the other left the replicas table
        finally:
            first.inlet.close()
            second.inlet.close()
        group.cancel_scope.cancel()
