"""A rolling restart with every transport talking: three real daemons on one PostgreSQL
store, each with Telegram (webhooks through HAProxy), Discord and Slack (their fakes),
Matrix (the real Synapse) and the web channel's API (through a second HAProxy). While a
person talks on each, one message after another, the replicas are stopped (SIGTERM) and
started again one by one. Every message is answered once: none lost, none doubled, no
conversation left silent; and each clean stop exits 0."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import anyio.to_thread
import openai
import pytest

from tests.channels.cli_process import run_piped
from tests.cluster import invariants
from tests.cluster.daemons import ALLOWED, Daemons, running_daemons
from tests.fakes.discord_api import DiscordFake
from tests.fakes.slack_api import SlackFake
from tests.fakes.telegram_api import TelegramFake
from tests.matrix.accounts import register, unique
from tests.matrix.conftest import synapse
from tests.matrix.human import Human
from tests.matrix.synapse import SynapseServer
from tests.slack.harness import SCALE, USER
from thalos_bot_discord import TOKEN_ENV as DISCORD_TOKEN_ENV
from thalos_bot_matrix import TOKEN_ENV as MATRIX_TOKEN_ENV
from thalos_bot_slack import APP_TOKEN_ENV, BOT_TOKEN_ENV
from thalos_bot_slack.plugin import TIER_SCALE_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(420)]
__all__ = ["synapse"]
ANSWER = invariants.ANSWER
CHAT = ALLOWED[0]
KEY = re.compile(r"^(thk_\S+)$", re.MULTILINE)

Talk = Callable[[str], Awaitable[None]]
Count = Callable[[str], int]


def sections(discord: DiscordFake, discord_user: int, slack: SlackFake, matrix: str) -> str:
    return f"""
[channels.discord]
enabled = true
allowed_users = [{discord_user}]
base_url = "{discord.base_url}"
gateway_url = "{discord.gateway_url}"
guild_ready_timeout = 0.05
backoff_initial = 0.05
backoff_max = 0.2
drain_timeout = 5
[channels.slack]
enabled = true
allowed_users = ["{USER}"]
base_url = "{slack.base_url}"
ping_interval = 0.3
request_timeout = 3
drain_timeout = 5
{matrix}"""


async def test_a_rolling_restart_with_every_transport_talking(
    fake: TelegramFake,
    discord: DiscordFake,
    slack: SlackFake,
    synapse: SynapseServer,
    postgres_url: str,
    tmp_path: Path,
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    matrix = f"""[channels.matrix]
enabled = true
homeserver = "{synapse.base_url}"
user_id = "{bot.user_id}"
allowed_users = ["{alice.user_id}"]
sync_timeout = 2
request_timeout = 5
room_min_interval = "0.05s"
backoff_initial = "0.1s"
backoff_max = "1s"
"""
    discord_user = discord.add_user("owner")
    env = {
        DISCORD_TOKEN_ENV: discord.token,
        BOT_TOKEN_ENV: slack.bot_token,
        APP_TOKEN_ENV: slack.app_token,
        TIER_SCALE_ENV: str(SCALE),
        MATRIX_TOKEN_ENV: bot.access_token,
    }
    fake.add_chat(CHAT)
    async with (
        Human(synapse, alice) as human,
        running_daemons(
            fake,
            postgres_url,
            tmp_path,
            lease=3.0,
            env=env,
            sections=sections(discord, discord_user, slack, matrix),
            web=True,
        ) as d,
    ):
        room = await human.direct_chat(bot.user_id)
        await human.until(lambda h: h.joined(room, bot.user_id))
        api = _api(d)
        dm = discord.dm_channel_id(discord_user)
        slack_dm = slack.dm(USER)
        replies: dict[str, str] = {}

        async def ask_api(text: str) -> None:
            told: list[str] = []
            for _ in range(5):
                try:
                    done = await anyio.to_thread.run_sync(
                        lambda: api.chat.completions.create(
                            model="assistant", messages=[{"role": "user", "content": text}]
                        )
                    )
                    break
                except openai.APIStatusError as exc:
                    # Only a "come back" is sent again, as an OpenAI client does: the
                    # stopping replica's 503 (nothing kept), or the key's rate limit
                    # (60 a minute: this talker asks as fast as it is answered); anything
                    # else fails.
                    answer = exc.response
                    later = answer.status_code in (429, 503)
                    if not later or "retry-after" not in answer.headers:
                        raise AssertionError(
                            f"{text!r}: {answer.status_code} {answer.text[:300]!r}"
                        ) from None
                    told.append(f"{answer.status_code} {answer.text[:200]}")
                    await anyio.sleep(float(answer.headers["retry-after"]))
            else:
                raise AssertionError(f"{text!r}: told to come back five times: {told}")
            replies[text] = done.choices[0].message.content or ""

        async def say_matrix(text: str) -> None:
            await human.say(room, text)
            await human.until(lambda h: ANSWER + text in h.bodies(room, bot.user_id) or None)

        async def say_telegram(text: str) -> None:
            fake.push_text(CHAT, CHAT, text)
            await fake.wait_for(lambda: ANSWER + text in invariants.finals(fake, CHAT), 90)

        async def say_discord(text: str) -> None:
            discord.say_dm(discord_user, text)
            await discord.wait_for(lambda: ANSWER + text in discord.texts(dm) or None, 90)

        async def say_slack(text: str) -> None:
            slack.say(USER, text)
            await slack.wait_for(lambda: ANSWER + text in slack.texts(slack_dm) or None, 90)

        talkers: dict[str, tuple[Talk, Count]] = {
            "telegram": (say_telegram, lambda t: invariants.finals(fake, CHAT).count(ANSWER + t)),
            "discord": (say_discord, lambda t: discord.texts(dm).count(ANSWER + t)),
            "slack": (say_slack, lambda t: slack.texts(slack_dm).count(ANSWER + t)),
            "matrix": (say_matrix, lambda t: human.bodies(room, bot.user_id).count(ANSWER + t)),
            "api": (ask_api, lambda t: int(replies.get(t) == ANSWER + t)),
        }
        sent: dict[str, list[str]] = {name: [] for name in talkers}
        done = anyio.Event()

        async def talk(name: str) -> None:
            say = talkers[name][0]
            n = 0
            while not done.is_set() or n < 2:
                text = f"{name} {n}"
                sent[name].append(text)
                with anyio.fail_after(120):
                    await say(text)
                n += 1

        async with anyio.create_task_group() as group:
            for name in talkers:
                group.start_soon(talk, name)
            for old in list(d.replicas):
                assert await old.terminate() == 0, old.log.read_text()[-2000:]
                await d.replace(old)
            done.set()

        async def probe(name: str) -> None:
            with anyio.fail_after(120):
                await talkers[name][0](f"{name} probe")

        # A last message on each transport, answered (tests/cluster/stall.py): a second
        # answer of anything said before shows by then.
        async with anyio.create_task_group() as group:
            for name in talkers:
                group.start_soon(probe, name)
        for name, (_, count) in talkers.items():
            counts = {text: count(text) for text in sent[name]}
            assert all(n == 1 for n in counts.values()), f"{name}: {counts}"
            assert len(sent[name]) >= 2, f"{name} said too little: {sent[name]}"


def _api(d: Daemons) -> openai.OpenAI:
    """A key made in one replica's folder (the store is shared), the client through the
    web balancer."""
    assert d.web is not None
    home = d.replicas[0].home
    assert home is not None
    made = run_piped(["api", "key", "create", "--person", "p1"], "", cwd=home, timeout=60)
    assert made.returncode == 0, made.stderr
    found = KEY.search(made.stdout)
    assert found is not None, made.stdout
    return openai.OpenAI(base_url=f"{d.web.base}/v1", api_key=found.group(1), max_retries=0)
