"""Slack's turns run by any replica: three real daemons on one PostgreSQL store with
Slack (the fake's Socket Mode and Web API). One replica holds the socket and only
stores what it receives; each conversation's turns run on the replica holding its
lease, with a Web API client of its own. Which replica ran each turn is read from
their logs (``connection_turn_taken``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from tests.cluster.anywhere import lane_holder, runners, takes, until_taken
from tests.cluster.connection_daemons import ANSWER, LEASE, owner_pid, replica_config, start
from tests.cluster.processes import Replica
from tests.cluster.stall import WORDS
from tests.fakes.slack_api import SlackFake
from tests.slack.harness import SCALE, USER
from thalos_bot_slack import APP_TOKEN_ENV, BOT_TOKEN_ENV
from thalos_bot_slack.plugin import TIER_SCALE_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

PEOPLE = [USER, *(f"U0PERSON{n}" for n in range(1, 6))]
"""Six people, each in a DM of their own with the bot: six conversations."""


@asynccontextmanager
async def three_replicas(
    slack: SlackFake, postgres_url: str, tmp_path: Path
) -> AsyncIterator[list[Replica]]:
    config = (
        replica_config(postgres_url, "slack")
        + f"""
allowed_users = {json.dumps(PEOPLE)}
base_url = "{slack.base_url}"
ping_interval = 0.3
request_timeout = 3
drain_timeout = 5
"""
    )
    env = {
        BOT_TOKEN_ENV: slack.bot_token,
        APP_TOKEN_ENV: slack.app_token,
        TIER_SCALE_ENV: str(SCALE),
    }
    replicas: list[Replica] = []
    try:
        for index in range(3):
            replicas.append(await start(tmp_path, config, env, index))  # noqa: PERF401
        yield replicas
    finally:
        for replica in replicas:
            replica.close()


def answers(slack: SlackFake, person: str, text: str) -> int:
    return slack.texts(slack.dm(person)).count(ANSWER + text)


async def shown(slack: SlackFake, person: str, text: str, timeout: float = 40) -> None:
    await slack.wait_for(lambda: answers(slack, person, text) >= 1 or None, timeout)


async def owner(url: str, replicas: list[Replica]) -> Replica:
    with anyio.fail_after(20):
        while True:
            pid = await anyio.to_thread.run_sync(owner_pid, url, "slack")
            found = [r for r in replicas if r.pid == pid and r.logged("connection_opened")]
            if found:
                return found[0]
            await anyio.sleep(0.05)


async def test_conversations_are_answered_by_several_replicas_each_once(
    slack: SlackFake, postgres_url: str, tmp_path: Path
) -> None:
    """Six people talk at once, twice each; the first three events' acknowledgements
    are lost, so Slack sends them again: every message is answered once, the turns
    ran on more than one replica, and no inbox row was taken twice."""
    async with three_replicas(slack, postgres_url, tmp_path) as replicas:
        connection = await owner(postgres_url, replicas)
        slack.lose_acks(3)
        for person in PEOPLE:
            slack.say(person, f"first from {person}")
        for person in PEOPLE:
            await shown(slack, person, f"first from {person}")
        with anyio.fail_after(30):  # Slack sent the unacknowledged ones again
            while not connection.logged("slack_redelivery_ignored"):
                await anyio.sleep(0.05)
        for person in PEOPLE:
            slack.say(person, f"second from {person}")
        for person in PEOPLE:
            await shown(slack, person, f"second from {person}")
        await anyio.sleep(1.5)
        for person in PEOPLE:
            for text in (f"first from {person}", f"second from {person}"):
                assert answers(slack, person, text) == 1, slack.texts(slack.dm(person))
        ran = runners(replicas)
        assert sum(1 for conversations in ran.values() if conversations) >= 2, ran
        assert all(n == 1 for n in takes(replicas).values()), takes(replicas)
        assert sum(takes(replicas).values()) == 2 * len(PEOPLE)
        # One socket, the owner's; the others never opened one.
        assert slack.socket.most_live == 1
        others = [r for r in replicas if r is not connection]
        assert not any(r.logged("connection_opened") for r in others)


async def test_a_replica_killed_mid_turn_that_is_not_the_owner(
    slack: SlackFake, postgres_url: str, tmp_path: Path
) -> None:
    """The replica running a conversation's turn, not the connection's owner, is killed
    (``kill -9``) a few words into its answer: the conversation's next lease holder
    takes the row again and answers it once; the person's next message is answered
    once too."""
    async with three_replicas(slack, postgres_url, tmp_path) as replicas:
        connection = await owner(postgres_url, replicas)
        for person in PEOPLE:
            slack.say(person, f"hello from {person}")
        for person in PEOPLE:
            await shown(slack, person, f"hello from {person}")
        # A conversation whose lease another replica than the owner holds.
        chosen: tuple[str, Replica] | None = None
        for person in PEOPLE:
            pid = await anyio.to_thread.run_sync(
                lane_holder, postgres_url, "slack", slack.dm(person)
            )
            held = [r for r in replicas if r.pid == pid and r is not connection]
            if held:
                chosen = (person, held[0])
                break
        assert chosen is not None, runners(replicas)
        person, runner = chosen
        text = f"slack-cut {WORDS}"
        slack.say(person, text)
        await until_taken(postgres_url, "slack", "slack-cut")
        await anyio.sleep(0.3)  # a few words into its answer
        runner.kill()
        await shown(slack, person, text, timeout=4 * LEASE + 30)
        slack.say(person, "after the kill")
        await shown(slack, person, "after the kill", timeout=4 * LEASE + 30)
        await anyio.sleep(1.5)
        assert answers(slack, person, text) == 1, slack.texts(slack.dm(person))
        assert answers(slack, person, "after the kill") == 1
        again = [r for r in replicas if r is not runner and r.logged("lease_taken")]
        assert again
        assert connection.process.poll() is None, "the owner kept the connection"


async def test_the_connection_owner_killed_each_message_still_once(
    slack: SlackFake, postgres_url: str, tmp_path: Path
) -> None:
    """The owner is killed with an event it stored but whose acknowledgement was lost:
    Slack delivers it again to the next owner, which finds it stored; a message said
    right after the kill waits at Slack for the next owner. Each answered once, by
    whichever replica holds its conversation."""
    async with three_replicas(slack, postgres_url, tmp_path) as replicas:
        connection = await owner(postgres_url, replicas)
        for person in PEOPLE:
            slack.say(person, f"hello from {person}")
        for person in PEOPLE:
            await shown(slack, person, f"hello from {person}")
        slack.lose_acks(1)
        slack.say(USER, "acknowledged nowhere")
        await until_taken(postgres_url, "slack", "acknowledged nowhere")
        connection.kill()
        for person in PEOPLE:
            slack.say(person, f"after the kill from {person}")
        for person in PEOPLE:
            await shown(slack, person, f"after the kill from {person}", timeout=4 * LEASE + 30)
        await shown(slack, USER, "acknowledged nowhere")
        await anyio.sleep(1.5)
        assert answers(slack, USER, "acknowledged nowhere") == 1
        for person in PEOPLE:
            assert answers(slack, person, f"after the kill from {person}") == 1
        survivors = [r for r in replicas if r is not connection]
        with anyio.fail_after(20):  # Slack's redelivery reached the next owner
            while not any(r.logged("connection_message_seen_before") for r in survivors):
                await anyio.sleep(0.05)
