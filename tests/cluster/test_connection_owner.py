"""One owner per platform connection: three real daemons on one PostgreSQL store, all
with Discord enabled (the fake, which dispatches every event to every gateway session
as Discord does). Only the owner of the connection lease opens the gateway: each DM is
answered once; after ``kill -9`` of the owner a standby takes over once the lease ran
out; a clean stop hands it over at once."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.cluster.connection_daemons import LEASE, Discords, running_discords
from tests.cluster.stall import Talk, probe_text, stall_owner_mid_answer
from tests.fakes.discord_api import DiscordFake

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]


async def quiet(cluster: Discords) -> None:
    """A probe said and answered (tests/cluster/stall.py): a second answer of what was
    said before (every replica with a gateway session answers at once) shows by then."""
    await cluster.say(probe_text())


async def answered_once(cluster: Discords, text: str) -> float:
    took = await cluster.say(text)
    await quiet(cluster)
    assert cluster.answers(text) == 1, cluster.fake.texts(cluster.dm)
    return took


async def test_each_dm_answered_once_across_kill_and_clean_stop(
    discord: DiscordFake, postgres_url: str, tmp_path: Path
) -> None:
    async with running_discords(discord, postgres_url, tmp_path, 3) as cluster:
        for n in range(3):
            await answered_once(cluster, f"hello {n}")
        first = await cluster.owner()

        first.kill()  # its lease runs out; a standby opens the gateway then
        second = await cluster.owner(timeout=4 * LEASE + 10, gone=(first,))
        await answered_once(cluster, "after the kill")

        began = anyio.current_time()
        assert await second.terminate() == 0  # releases the lease as it stops
        third = await cluster.owner(timeout=10, gone=(first, second))
        handed_over = anyio.current_time() - began
        await answered_once(cluster, "after the clean stop")
        # Handed over, not run out: well under a lease span after the stop completed.
        assert handed_over < 60, handed_over
        assert third.logged("connection_opened")


async def test_an_owner_taking_the_connection_back_answers_nothing_twice(
    discord: DiscordFake, postgres_url: str, tmp_path: Path
) -> None:
    """Discord's catch-up reads what came after the last message this replica admitted
    (a file in its own state folder): a replica that owned the connection before, and
    takes it back after another answered in between, must not answer those again."""
    async with running_discords(discord, postgres_url, tmp_path, 2) as cluster:
        await answered_once(cluster, "before")
        first = await cluster.owner()
        assert await first.terminate() == 0
        second = await cluster.owner(gone=(first,))
        await answered_once(cluster, "while the other owns it")

        back = await cluster.restart(first)  # the same state folder: its old marks
        assert await second.terminate() == 0
        assert await cluster.owner(gone=(second,)) is back
        await answered_once(cluster, "back again")
        assert cluster.answers("while the other owns it") == 1, discord.texts(cluster.dm)


async def test_a_stalled_owner_says_nothing_once_it_wakes_up(
    discord: DiscordFake, postgres_url: str, tmp_path: Path
) -> None:
    """SIGSTOP of the owner mid-answer (tests/cluster/stall.py): its gateway socket stays
    open (the fake still dispatches to it), a standby takes the lease over once it ran
    out and answers; on SIGCONT the old owner reads what was queued for it and must pass
    none of it on, and its turn's commit is refused."""
    async with running_discords(discord, postgres_url, tmp_path, 2) as cluster:
        await answered_once(cluster, "before")

        async def say(text: str) -> None:
            discord.say_dm(cluster.user, text)

        talk = Talk(postgres_url, "discord", say, cluster.answers)
        await stall_owner_mid_answer(talk, cluster.replicas)


async def test_a_dm_sent_while_no_replica_holds_the_gateway_is_answered_once(
    discord: DiscordFake, postgres_url: str, tmp_path: Path
) -> None:
    """The takeover gap: a DM sent after ``kill -9`` of the owner, before any replica has
    a gateway session, is dispatched to nobody. The standby that takes over has never
    owned the connection; it catches up from the marks in the shared store (the dead
    owner's), reads the DM from the history, and answers it once."""
    async with running_discords(discord, postgres_url, tmp_path, 2) as cluster:
        await answered_once(cluster, "before")
        first = await cluster.owner()
        first.kill()
        with anyio.fail_after(10):
            while discord.connected():
                await anyio.sleep(0.05)
        discord.say_dm(cluster.user, "in the gap")
        second = await cluster.owner(timeout=4 * LEASE + 10, gone=(first,))
        await discord.wait_for(lambda: cluster.answers("in the gap") >= 1 or None, 30)
        await quiet(cluster)
        assert cluster.answers("in the gap") == 1, discord.texts(cluster.dm)
        assert second.logged("discord_caught_up")
