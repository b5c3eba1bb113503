"""Slack's turns run by any replica: three real daemons on one PostgreSQL store with
Slack (the fake's Socket Mode and Web API). One replica holds the socket and only
stores what it receives; each conversation's turns run on the replica holding its
lease, with a Web API client of its own. Which replica ran each turn is read from
their logs (``connection_turn_taken``; see tests/cluster/anywhere.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from tests.cluster.anywhere import Crowd, kill_a_runner_mid_turn, kill_the_owner, spread_once
from tests.cluster.connection_daemons import replica_config
from tests.cluster.crowds import slack_crowd, slack_keys
from tests.fakes.slack_api import SlackFake
from tests.slack.harness import USER

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]


@asynccontextmanager
async def crowd_of(slack: SlackFake, postgres_url: str, tmp_path: Path) -> AsyncIterator[Crowd]:
    config = replica_config(postgres_url, "slack") + slack_keys(slack)
    async with slack_crowd(slack, postgres_url, tmp_path, config) as started:
        yield started


async def test_conversations_are_answered_by_several_replicas_each_once(
    slack: SlackFake, postgres_url: str, tmp_path: Path
) -> None:
    """The first three events' acknowledgements are lost, so Slack sends them again
    (the owner's ledger knows them); only the owner opened a socket."""
    async with crowd_of(slack, postgres_url, tmp_path) as crowd:
        owner = await crowd.owner()
        slack.lose_acks(3)
        await spread_once(crowd)
        assert owner.logged("slack_redelivery_ignored")
        assert slack.socket.most_live == 1
        others = [r for r in crowd.replicas if r is not owner]
        assert not any(r.logged("connection_opened") for r in others)


async def test_a_replica_killed_mid_turn_that_is_not_the_owner(
    slack: SlackFake, postgres_url: str, tmp_path: Path
) -> None:
    async with crowd_of(slack, postgres_url, tmp_path) as crowd:
        await kill_a_runner_mid_turn(crowd, await crowd.owner())


async def test_the_connection_owner_killed_each_message_still_once(
    slack: SlackFake, postgres_url: str, tmp_path: Path
) -> None:
    """Also: an event the owner stored but whose acknowledgement was lost is delivered
    again by Slack to the next owner, whose ledger (kept beside the connection's lease)
    knows it, and it runs once."""
    async with crowd_of(slack, postgres_url, tmp_path) as crowd:
        owner = await crowd.owner()

        async def unacknowledged() -> None:
            slack.lose_acks(1)
            slack.say(USER, "acknowledged nowhere")
            await crowd.shown(USER, "acknowledged nowhere")  # well within Slack's 3 s

        await kill_the_owner(crowd, owner, unacknowledged)
        survivors = [r for r in crowd.replicas if r is not owner]
        with anyio.fail_after(20):  # Slack's redelivery reached the next owner
            while not any(r.logged("slack_redelivery_ignored") for r in survivors):
                await anyio.sleep(0.05)
        assert crowd.answers(USER, "acknowledged nowhere") == 1
