"""Three replicas with Slack or with Discord, and six people each in a DM of their own
(:class:`~tests.cluster.anywhere.Crowd`), for the any-replica tests."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from tests.cluster.anywhere import Crowd, sees_all
from tests.cluster.connection_daemons import ANSWER, start
from tests.cluster.processes import Replica
from tests.fakes.discord_api import DiscordFake
from tests.fakes.slack_api import SlackFake
from tests.slack.harness import SCALE, USER
from thalos_bot_discord import TOKEN_ENV
from thalos_bot_slack import APP_TOKEN_ENV, BOT_TOKEN_ENV
from thalos_bot_slack.plugin import TIER_SCALE_ENV

SLACK_PEOPLE = [USER, *(f"U0PERSON{n}" for n in range(1, 6))]
"""Six people on Slack, each in a DM of their own with the bot: six conversations."""


def slack_keys(slack: SlackFake) -> str:
    """``[channels.slack]``'s keys for the six people (after its table's head)."""
    return f"""
allowed_users = {json.dumps(SLACK_PEOPLE)}
base_url = "{slack.base_url}"
ping_interval = 0.3
request_timeout = 3
drain_timeout = 5
"""


def discord_people(fake: DiscordFake) -> list[str]:
    """Six people on Discord (their user ids), each to DM the bot."""
    return [str(fake.add_user(f"person{n}")) for n in range(6)]


@asynccontextmanager
async def slack_crowd(
    slack: SlackFake, url: str, tmp_path: Path, config: str, env: dict[str, str] | None = None
) -> AsyncIterator[Crowd]:
    def say(person: str, text: str) -> None:
        slack.say(person, text)

    keys = {BOT_TOKEN_ENV: slack.bot_token, APP_TOKEN_ENV: slack.app_token}
    async with _three(tmp_path, config, keys | {TIER_SCALE_ENV: str(SCALE)} | (env or {})) as (
        replicas
    ):
        yield Crowd(
            url,
            "slack",
            SLACK_PEOPLE,
            replicas,
            say,
            lambda person, text: slack.texts(slack.dm(person)).count(ANSWER + text),
            slack.dm,
        )


@asynccontextmanager
async def discord_crowd(
    fake: DiscordFake,
    url: str,
    tmp_path: Path,
    config: str,
    people: list[str],
    env: dict[str, str] | None = None,
) -> AsyncIterator[Crowd]:
    def say(person: str, text: str) -> None:
        fake.say_dm(int(person), text)

    async with _three(tmp_path, config, {TOKEN_ENV: fake.token} | (env or {})) as replicas:
        yield Crowd(
            url,
            "discord",
            people,
            replicas,
            say,
            lambda person, text: fake.texts(fake.dm_channel_id(int(person))).count(ANSWER + text),
            lambda person: f"dm:{person}",
        )


@asynccontextmanager
async def _three(tmp_path: Path, config: str, env: dict[str, str]) -> AsyncIterator[list[Replica]]:
    """Three replicas of ``config``, started one by one; closed at the end."""
    replicas: list[Replica] = []
    try:
        for index in range(3):
            replicas.append(await start(tmp_path, config, env, index))  # noqa: PERF401
        with anyio.fail_after(30):  # each knows the others and the owner (a heartbeat)
            while not all(sees_all(replica, 3) for replica in replicas):
                await anyio.sleep(0.05)
        yield replicas
    finally:
        for replica in replicas:
            replica.close()
