"""Receiving apart from running, with real daemons on the Discord fake: what the owner
of the connection receives waits in the shared inbox until the turn answering it is
kept. The owner killed (``kill -9``) once it took a message and before it answered:
another replica answers it, once. Discord's RESUME replaying events the owner had seen,
and the same MESSAGE_CREATE dispatched again to the next owner, run nothing twice."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from tests.cluster.connection_daemons import LEASE, running_discords
from tests.cluster.stall import probe_text, runner_pid, until_taken
from tests.fakes.discord_api import DiscordFake

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]
LONG = " ".join(f"word{n}" for n in range(150))
"""Echoed one word each 0.03 s by the scripted model: its turn lasts about 4.5 s."""


async def test_a_message_taken_by_an_owner_killed_before_answering_is_answered_once(
    discord: DiscordFake, postgres_url: str, tmp_path: Path
) -> None:
    async with running_discords(discord, postgres_url, tmp_path, 2) as cluster:
        await cluster.say("before")
        owner = await cluster.owner()
        discord.say_dm(cluster.user, LONG)
        conversation = await until_taken(postgres_url, "discord", LONG, timeout=20)
        # The replica running it: the conversation's lease holder (the owner comes last
        # in each conversation's order, but runs it while it thinks itself alone).
        pid = await anyio.to_thread.run_sync(runner_pid, postgres_url, "discord", conversation)
        first = next((r for r in cluster.replicas if r.pid == pid), owner)
        first.kill()  # its turn is under way: nothing kept, nothing answered
        assert cluster.answers(LONG) == 0
        (second,) = [r for r in cluster.replicas if r is not first]
        if first is owner:
            await cluster.owner(timeout=4 * LEASE + 10, gone=(first,))
        await discord.wait_for(lambda: cluster.answers(LONG) >= 1 or None, 30)
        await cluster.say(probe_text())  # answered after LONG: a second LONG shows by then
        assert cluster.answers(LONG) == 1, discord.texts(cluster.dm)
        assert second.logged("connection_message_taken_over")
        assert cluster.answers("before") == 1


async def test_replayed_and_duplicated_events_run_once(
    discord: DiscordFake, postgres_url: str, tmp_path: Path
) -> None:
    async with running_discords(discord, postgres_url, tmp_path, 2) as cluster:
        for n in range(3):
            await cluster.say(f"first {n}")
        owner = await cluster.owner()
        with discord.lock:
            discord.gateway.replay_overlap = 3  # RESUME replays what was seen too
            resumes = discord.gateway.resumes
        assert discord.drop() == 1
        with anyio.fail_after(20):
            while discord.gateway.resumes == resumes or not discord.connected():
                await anyio.sleep(0.05)
        # The replay did reach it (and was read by the time the log says so).
        with anyio.fail_after(20):
            while not owner.logged("discord_event_replayed"):
                await anyio.sleep(0.05)
        # The same event dispatched again to the next owner (which never saw it).
        assert await owner.terminate() == 0
        second = await cluster.owner(gone=(owner,))
        mine = [m for m in discord.messages(cluster.dm) if m["content"] == "first 1"]
        with discord.lock:
            discord.message_created(mine[0])
        await cluster.say("after")
        await cluster.say(probe_text())  # a second "first 1" or "after" shows by then
        texts = discord.texts(cluster.dm)
        for n in range(3):
            assert cluster.answers(f"first {n}") == 1, texts
        assert cluster.answers("after") == 1, texts
        assert second.logged("connection_message_seen_before")
