"""One owner per platform connection, on Slack: two real daemons on one PostgreSQL
store, both with Slack enabled (the fake's Socket Mode). Only the owner of the
connection lease opens the socket; after ``kill -9`` of the owner, a DM sent at once
waits at Slack (the fake redelivers what no live connection took) and is answered once
by the standby when it opens the connection. SIGSTOP of the owner mid-answer: the
standby answers, and the old owner, continued, finds its token fenced (tests/cluster/
stall.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import psycopg
import pytest

from tests.cluster.connection_daemons import (
    ANSWER,
    LEASE,
    owner_pid,
    replica_config,
    start,
    took_up_the_dead_ones,
)
from tests.cluster.processes import Replica
from tests.cluster.stall import Talk, probe_text, stall_owner_mid_answer
from tests.fakes.slack_api import SlackFake
from tests.slack.harness import CHANNEL, SCALE, USER
from thalos_bot_slack import APP_TOKEN_ENV, BOT_TOKEN_ENV
from thalos_bot_slack.plugin import TIER_SCALE_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]


def slack_config(fake: SlackFake, pg_url: str) -> str:
    return (
        replica_config(pg_url, "slack")
        + f"""
allowed_users = ["{USER}"]
channels = ["{CHANNEL}"]
base_url = "{fake.base_url}"
ping_interval = 0.3
request_timeout = 3
drain_timeout = 5
"""
    )


@asynccontextmanager
async def two_slack_replicas(
    slack: SlackFake, postgres_url: str, tmp_path: Path
) -> AsyncIterator[tuple[Replica, Replica]]:
    """Two daemons with Slack on one store, once a first DM was answered: (the owner of
    the connection, the standby)."""
    config = slack_config(slack, postgres_url)
    env = {
        BOT_TOKEN_ENV: slack.bot_token,
        APP_TOKEN_ENV: slack.app_token,
        TIER_SCALE_ENV: str(SCALE),
    }
    replicas: list[Replica] = []
    try:
        for index in range(2):
            replicas.append(await start(tmp_path, config, env, index))  # noqa: PERF401
        await answered_once(slack, "hello")
        pid = await anyio.to_thread.run_sync(owner_pid, postgres_url, "slack")
        (first,) = [r for r in replicas if r.pid == pid]
        (second,) = [r for r in replicas if r is not first]
        yield first, second
    finally:
        for replica in replicas:
            replica.close()


async def answered(fake: SlackFake, text: str, timeout: float = 30) -> None:
    dm = fake.dm(USER)
    fake.say(USER, text)
    await fake.wait_for(lambda: ANSWER + text in fake.texts(dm) or None, timeout)


async def quiet(fake: SlackFake) -> None:
    """A probe said and answered (tests/cluster/stall.py): a second answer of what was
    said before shows by then."""
    await answered(fake, probe_text())


async def answered_once(fake: SlackFake, text: str, timeout: float = 30) -> None:
    await answered(fake, text, timeout)
    await quiet(fake)
    assert fake.texts(fake.dm(USER)).count(ANSWER + text) == 1, fake.texts(fake.dm(USER))


async def test_each_slack_dm_answered_once_across_a_kill(
    slack: SlackFake, postgres_url: str, tmp_path: Path
) -> None:
    async with two_slack_replicas(slack, postgres_url, tmp_path) as (first, _):
        first.kill()
        await answered_once(slack, "after the kill", timeout=4 * LEASE + 20)
        # One connection at a time, the owner's (it may reconnect, e.g. when the machine is
        # slow to answer a ping), never one per replica.
        assert slack.socket.most_live == 1
        assert slack.socket.connections >= 2


async def test_a_thread_begun_with_the_last_owner_needs_no_mention_with_the_next(
    slack: SlackFake, postgres_url: str, tmp_path: Path
) -> None:
    """A mention in a listed channel begins a thread, whose later messages need no
    mention. The threads are kept beside the connection's lease (the shared store), so
    after ``kill -9`` of the owner the next one still answers in it; kept in each
    replica's own file, the next owner ignored the reply as chatter."""
    async with two_slack_replicas(slack, postgres_url, tmp_path) as (first, _):
        mention = f"<@{slack.workspace.bot_user}>"
        root = slack.say(USER, f"{mention} begin here", channel=CHANNEL)
        await slack.wait_for(
            lambda: ANSWER + "begin here" in slack.texts(CHANNEL, thread_ts=root) or None, 30
        )
        first.kill()
        await answered_once(slack, "after the kill", timeout=4 * LEASE + 20)  # next owner on
        slack.say(USER, "and without a mention", channel=CHANNEL, thread_ts=root)
        await slack.wait_for(
            lambda: (
                ANSWER + "and without a mention" in slack.texts(CHANNEL, thread_ts=root) or None
            ),
            30,
        )


async def test_an_envelope_redelivered_to_the_next_owner_runs_once(
    slack: SlackFake, postgres_url: str, tmp_path: Path
) -> None:
    """The owner answers a DM but its acknowledgement is lost, and it is killed: Slack
    delivers the envelope again to the next owner's connection, whose ledger (kept
    beside the connection's lease) knows it, and it runs once. (Were that ledger's save
    refused, the shared inbox knows it too: ``connection_message_seen_before``.)"""
    async with two_slack_replicas(slack, postgres_url, tmp_path) as (first, second):
        dm = slack.dm(USER)
        slack.lose_acks(1)
        slack.say(USER, "acknowledged nowhere")
        await slack.wait_for(lambda: ANSWER + "acknowledged nowhere" in slack.texts(dm) or None)
        first.kill()  # well within Slack's 3 s: the envelope was never acknowledged
        await answered_once(slack, "after the kill", timeout=4 * LEASE + 20)
        with anyio.fail_after(20):  # Slack's redelivery reached the next owner
            while not second.logged("slack_redelivery_ignored"):
                await anyio.sleep(0.05)
        await quiet(slack)
        assert slack.texts(dm).count(ANSWER + "acknowledged nowhere") == 1, slack.texts(dm)
        redelivered = [e for e in slack.socket.envelopes.values() if e.attempt > 0]
        assert redelivered, "Slack delivered nothing again"


async def test_a_slack_owner_stopped_mid_answer_says_nothing_once_it_continues(
    slack: SlackFake, postgres_url: str, tmp_path: Path
) -> None:
    """Its socket stays open while it is stopped (Slack sends to the newest connection,
    the next owner's, once there is one)."""
    async with two_slack_replicas(slack, postgres_url, tmp_path) as (first, second):
        dm = slack.dm(USER)

        async def say(text: str) -> None:
            slack.say(USER, text)

        talk = Talk(postgres_url, "slack", say, lambda text: slack.texts(dm).count(ANSWER + text))
        stopped, took_over = await stall_owner_mid_answer(talk, [first, second])
        assert sorted([stopped.pid, took_over.pid]) == sorted([first.pid, second.pid])


def held(url: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT 1 FROM connection_holds WHERE channel_id = 'slack' AND retry_until > now()"
        ).fetchone()
    return row is not None


async def test_a_429_told_to_a_killed_owner_is_obeyed_by_the_next_one(
    slack: SlackFake, postgres_url: str, tmp_path: Path
) -> None:
    """A post into the DM is answered 429 (Retry-After 10 s) and the replica that made
    it (any replica runs the DM's turns; the owner or not) is killed during the wait:
    the other sends the answer left pending only once the wait is over (the fake records
    any call made into it, and the fixture fails on one)."""
    async with two_slack_replicas(slack, postgres_url, tmp_path) as replicas:
        dm = slack.dm(USER)
        slack.rate_limit_next("chat.postMessage", seconds=10, channel=dm)
        slack.say(USER, "held back")
        with anyio.fail_after(20):
            while not await anyio.to_thread.run_sync(held, postgres_url):
                await anyio.sleep(0.05)
        with anyio.fail_after(10):
            while not any(r.logged("connection_hold_shared") for r in replicas):
                await anyio.sleep(0.05)
        (told,) = [r for r in replicas if r.logged("connection_hold_shared")]
        (other,) = [r for r in replicas if r is not told]
        told.kill()
        # The answer left unsent (its final kept and pending, or its turn cut before it
        # was kept) is taken up once the dead one's lease on the DM ran out, while the
        # wait still runs: else the other would have nothing left to obey, and the fake
        # nothing to catch.
        await took_up_the_dead_ones(other)
        assert await anyio.to_thread.run_sync(held, postgres_url), "taken up after the wait"
        await slack.wait_for(lambda: ANSWER + "held back" in slack.texts(dm) or None, 40)
        await quiet(slack)
        assert slack.texts(dm).count(ANSWER + "held back") == 1, slack.texts(dm)
        assert other.logged("connection_hold_obeyed")
        assert slack.limits.violations == []
