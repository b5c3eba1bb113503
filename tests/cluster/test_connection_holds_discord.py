"""A 429 one replica sending to Discord met is obeyed by the next one: real
daemons on the Discord fake, which records any request made into a bucket before the
reset it announced (the fixture fails the test on one). discord.py waits a 429 out
inside its own HTTP client; the channel hears of it all the same and stores it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.to_thread
import psycopg
import pytest

from tests.cluster.connection_daemons import LEASE, running_discords, took_up_the_dead_ones
from tests.cluster.stall import probe_text
from tests.fakes.discord_api import DiscordFake
from thalos_bot.service.stores import OUTBOX_CLAIM_SPAN

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]
POSTS = "POST /channels/{channel_id}/messages"


@pytest.fixture
def discord() -> Iterator[DiscordFake]:
    with DiscordFake() as fake:
        yield fake
    assert fake.limits.violations == [], "a request went out before its bucket's reset"


def held(url: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT 1 FROM connection_holds WHERE channel_id = 'discord' AND retry_until > now()"
        ).fetchone()
    return row is not None


async def test_a_429_met_by_a_killed_owner_is_obeyed_by_the_next_one(
    discord: DiscordFake, postgres_url: str, tmp_path: Path
) -> None:
    async with running_discords(discord, postgres_url, tmp_path, 2) as cluster:
        await cluster.say("before")
        first = await cluster.owner()
        with discord.lock:
            discord.limits.forced[POSTS] = 10.0  # the next post: 429, wait 10 s
        discord.say_dm(cluster.user, "held back")
        with anyio.fail_after(20):
            while not await anyio.to_thread.run_sync(held, postgres_url):
                await anyio.sleep(0.05)
        # Any replica may run the DM's turn (the connection's owner only stores what
        # it hears): the one that met the 429 is killed.
        with anyio.fail_after(10):
            while not any(r.logged("connection_hold_shared") for r in cluster.replicas):
                await anyio.sleep(0.05)
        (told,) = [r for r in cluster.replicas if r.logged("connection_hold_shared")]
        (other,) = [r for r in cluster.replicas if r is not told]
        told.kill()  # discord.py was sleeping the wait out
        if told is first:
            await cluster.owner(timeout=4 * LEASE + 10, gone=(first,))
        # The turn was kept before the kill, its final left pending: a live replica
        # takes the row over once the dead one's lease on the DM ran out (at its sweep,
        # every lease), while the wait still runs: else it would have nothing left to
        # obey, and the fake nothing to catch.
        await took_up_the_dead_ones(other, OUTBOX_CLAIM_SPAN + 40)
        assert await anyio.to_thread.run_sync(held, postgres_url), "taken over after the wait"
        await discord.wait_for(lambda: cluster.answers("held back") >= 1 or None, 40)
        await cluster.say(probe_text())  # a second "held back" shows by then
        assert cluster.answers("held back") == 1, discord.texts(cluster.dm)
        assert other.logged("connection_hold_obeyed")
        with discord.lock:
            assert discord.limits.violations == []
