"""Discord's turns run by any replica: three real daemons on one PostgreSQL store with
Discord (the fake's gateway and REST API). One replica holds the gateway session and
only stores what it receives; each conversation's turns run on the replica holding its
lease, logged in for REST alone (no gateway session of its own). See
tests/cluster/anywhere.py for the cases."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from tests.cluster.anywhere import Crowd, kill_a_runner_mid_turn, kill_the_owner, spread_once
from tests.cluster.connection_daemons import discord_keys, replica_config
from tests.cluster.crowds import discord_crowd, discord_people
from tests.fakes.discord_api import DiscordFake

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]


@asynccontextmanager
async def crowd_of(fake: DiscordFake, postgres_url: str, tmp_path: Path) -> AsyncIterator[Crowd]:
    people = discord_people(fake)
    config = replica_config(postgres_url, "discord") + discord_keys(fake, people)
    async with discord_crowd(fake, postgres_url, tmp_path, config, people) as started:
        yield started


async def gateway_up(crowd: Crowd) -> None:
    owner = await crowd.owner()
    while not owner.logged("discord_ready"):
        await anyio.sleep(0.05)


async def test_conversations_are_answered_by_several_replicas_each_once(
    discord: DiscordFake, postgres_url: str, tmp_path: Path
) -> None:
    """Only the owner opened a gateway session."""
    async with crowd_of(discord, postgres_url, tmp_path) as crowd:
        await gateway_up(crowd)
        owner = await crowd.owner()
        await spread_once(crowd)
        others = [r for r in crowd.replicas if r is not owner]
        assert not any(r.logged("discord_ready") for r in others)


async def test_a_replica_killed_mid_turn_that_is_not_the_owner(
    discord: DiscordFake, postgres_url: str, tmp_path: Path
) -> None:
    async with crowd_of(discord, postgres_url, tmp_path) as crowd:
        await gateway_up(crowd)
        await kill_a_runner_mid_turn(crowd, await crowd.owner())


async def test_the_connection_owner_killed_each_message_still_once(
    discord: DiscordFake, postgres_url: str, tmp_path: Path
) -> None:
    async with crowd_of(discord, postgres_url, tmp_path) as crowd:
        await gateway_up(crowd)
        await kill_the_owner(crowd, await crowd.owner())
