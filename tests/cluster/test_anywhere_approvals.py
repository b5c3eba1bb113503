"""Tool approvals when a conversation's turn runs on a replica that is not the
connection's owner: three real daemons on one PostgreSQL store with Slack (the fake's
Socket Mode and Web API) or Discord (the fake's gateway and REST), and the Anthropic
fake as their model. The question is asked by the replica running the turn; the press
reaches the owner's connection, as the platform delivers it, and is relayed to the
replica that asked (a ``NOTIFY``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from tests.cluster.anywhere import SETTLE, Crowd, spread_once
from tests.cluster.connection_daemons import ANSWER, discord_keys, replica_config
from tests.cluster.crowds import (
    SLACK_PEOPLE,
    discord_crowd,
    discord_people,
    slack_crowd,
    slack_keys,
)
from tests.cluster.processes import Replica
from tests.cluster.stall import runner_pid as lane_holder
from tests.daemon_config import SCRIPTED, anthropic_provider
from tests.fakes.anthropic_api import AnthropicFake, StreamReply, text_reply, tool_use_reply
from tests.fakes.discord_api import DiscordFake
from tests.fakes.loopback_http import RecordedRequest
from tests.fakes.slack_api import SlackFake
from tests.fakes.slack_state import Message
from tests.slack.harness import STRANGER
from thalos_bot.channels.approvals.asking import OUTCOMES

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

KEY = {"ANTHROPIC_API_KEY": "sk-ant-test"}
REMEMBER = "remember "
"""A message starting so has the model call ``memory__remember`` (which asks first)."""
TOOL_SAID = "The tool said: "


def _said(body: dict[str, Any]) -> tuple[str, str | None]:
    """The last message's text and, when it carries a tool's result, that result."""
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content, None
    for block in content:
        if block.get("type") == "tool_result":
            inner = block["content"]
            return "", inner if isinstance(inner, str) else inner[0]["text"]
    return " ".join(b.get("text", "") for b in content if b.get("type") == "text"), None


def model(request: RecordedRequest) -> StreamReply:
    """Echo a message (as the scripted model does); call ``memory__remember`` for one
    that starts with :data:`REMEMBER`; say a tool's result."""
    text, result = _said(request.body)
    if result is not None:
        return text_reply(TOOL_SAID + result)
    if text.startswith(REMEMBER):
        return tool_use_reply("memory__remember", {"text": text.removeprefix(REMEMBER)})
    return text_reply(ANSWER + text)


@pytest.fixture
def anthropic() -> Iterator[AnthropicFake]:
    with AnthropicFake() as fake:
        fake.enqueue(*([model] * 200))
        yield fake


ASKS = """
[memory.embeddings]
mode = "off"
[[tool_policies]]
tool = "memory__remember"
action = "ask"
"""


def crowd_config(postgres_url: str, channel: str, anthropic: AnthropicFake, keys: str) -> str:
    """A replica's bot.toml: ``[channels.<channel>]`` with ``keys``, the Anthropic fake
    as the model, ``memory__remember`` asking first."""
    head = replica_config(postgres_url, channel)
    return head.replace(SCRIPTED, anthropic_provider(anthropic.base_url)) + keys + ASKS


@asynccontextmanager
async def asking_slack(
    slack: SlackFake, anthropic: AnthropicFake, postgres_url: str, tmp_path: Path
) -> AsyncIterator[Crowd]:
    keys = slack_keys(slack) + 'streaming = "off"\n'
    config = crowd_config(postgres_url, "slack", anthropic, keys)
    async with slack_crowd(slack, postgres_url, tmp_path, config, KEY) as crowd:
        yield crowd


async def not_the_owners(crowd: Crowd, owner: Replica) -> tuple[str, Replica]:
    """A person whose conversation another replica than the owner holds, and that one."""
    for person in crowd.people:
        conversation = crowd.conversation(person)
        pid = await anyio.to_thread.run_sync(lane_holder, crowd.url, crowd.channel, conversation)
        held = [r for r in crowd.replicas if r.pid == pid and r is not owner]
        if held:
            return person, held[0]
    raise AssertionError("every conversation is the owner's")


async def question(slack: SlackFake, person: str) -> Message:
    def asked() -> Message | None:
        for message in slack.messages(slack.dm(person)):
            if any(b.get("type") == "actions" for b in message.blocks):
                return message
        return None

    return await slack.wait_for(asked, timeout=40)


async def test_a_press_on_the_owners_socket_decides_a_question_another_replica_asked(
    slack: SlackFake, anthropic: AnthropicFake, postgres_url: str, tmp_path: Path
) -> None:
    """Before it, a stranger's press (refused where it arrives) and another allowed
    person's press (relayed: refused by the asking replica, whose turn it is not)
    change nothing; the person's own press is relayed and decides it: the tool runs
    and its answer shows once."""
    async with asking_slack(slack, anthropic, postgres_url, tmp_path) as crowd:
        owner = await crowd.owner()
        await spread_once(crowd)
        person, runner = await not_the_owners(crowd, owner)
        dm = slack.dm(person)
        crowd.say(person, REMEMBER + "green is my colour")
        asked = await question(slack, person)
        assert "memory__remember" in asked.text
        other = next(p for p in SLACK_PEOPLE if p != person)
        for presser in (STRANGER, other):
            refused = slack.press(presser, dm, asked.ts, "thalos_approve")
            await slack.wait_for(lambda: refused.acked)  # noqa: B023
        with anyio.fail_after(20):  # the other person's press reached the asking replica
            while not runner.logged("slack_answer_refused_stranger"):
                await anyio.sleep(0.05)
        assert any(b.get("type") == "actions" for b in asked.blocks), "nothing changed"
        assert not any(TOOL_SAID in t for t in slack.texts(dm))
        pressed = slack.press(person, dm, asked.ts, "thalos_approve")
        await slack.wait_for(lambda: pressed.acked)
        await slack.wait_for(lambda: "Approved by" in asked.text, timeout=20)
        await slack.wait_for(lambda: any(TOOL_SAID in t for t in slack.texts(dm)), timeout=40)
        await anyio.sleep(SETTLE)
        said = [t for t in slack.texts(dm) if t.startswith(TOOL_SAID)]
        assert len(said) == 1, said
        assert said[0].startswith(TOOL_SAID + "Remembered"), said  # the tool ran
        assert not any(b.get("type") == "actions" for b in asked.blocks), "the buttons went"
        assert owner.logged("slack_answer_relayed")
        assert runner is not owner


@asynccontextmanager
async def asking_discord(
    fake: DiscordFake, anthropic: AnthropicFake, postgres_url: str, tmp_path: Path
) -> AsyncIterator[Crowd]:
    people = discord_people(fake)
    config = crowd_config(postgres_url, "discord", anthropic, discord_keys(fake, people))
    async with discord_crowd(fake, postgres_url, tmp_path, config, people, KEY) as crowd:
        yield crowd


def approve(message: dict[str, Any]) -> str:
    """The custom id of the question's Approve button."""
    return next(
        str(b["custom_id"])
        for row in message["components"]
        for b in row["components"]
        if b["label"] == "Approve"
    )


async def test_a_press_on_the_owners_gateway_decides_a_question_another_replica_asked(
    discord: DiscordFake, anthropic: AnthropicFake, postgres_url: str, tmp_path: Path
) -> None:
    """As on Slack; each press is answered by the owner within Discord's 3 s: the
    stranger told privately, the others deferred (the asking replica edits the
    question)."""
    async with asking_discord(discord, anthropic, postgres_url, tmp_path) as crowd:
        owner = await crowd.owner()
        while not owner.logged("discord_ready"):
            await anyio.sleep(0.05)
        await spread_once(crowd)
        person, runner = await not_the_owners(crowd, owner)
        dm = discord.dm_channel_id(int(person))
        crowd.say(person, REMEMBER + "green is my colour")

        def asked() -> dict[str, Any] | None:
            return next((m for m in discord.messages(dm) if m["components"]), None)

        question = await discord.wait_for(asked, timeout=40)
        message = int(question["id"])
        stranger = discord.add_user("stranger")
        other = next(int(p) for p in crowd.people if p != person)
        discord.press(message, stranger, approve(question))
        await discord.wait_for(lambda: len(discord.callbacks) == 1)
        kind, data = discord.callbacks[0][1:]
        assert (kind, data["flags"]) == (4, 64), "the stranger is told, privately"
        discord.press(message, other, approve(question))
        await discord.wait_for(lambda: len(discord.callbacks) == 2)
        assert discord.callbacks[1][1] == 6, "deferred by the owner"
        with anyio.fail_after(20):  # the other person's press reached the asking replica
            # (which finds it pressed in another chat: on Discord, a press in a DM
            # comes from that DM's person)
            while not runner.logged("discord_answer_to_no_open_question"):
                await anyio.sleep(0.05)
        assert asked() is not None, "nothing changed"
        discord.press(message, int(person), approve(question))
        await discord.wait_for(lambda: len(discord.callbacks) == 3)
        assert discord.callbacks[2][1] == 6, "deferred by the owner"

        def closed() -> dict[str, Any] | None:
            shown = next(m for m in discord.messages(dm) if m["id"] == question["id"])
            return shown if not shown["components"] else None

        assert (
            f"{OUTCOMES['approved']} by" in (await discord.wait_for(closed, timeout=20))["content"]
        )
        await discord.wait_for(lambda: any(TOOL_SAID in t for t in discord.texts(dm)), timeout=40)
        await anyio.sleep(SETTLE)
        said = [t for t in discord.texts(dm) if t.startswith(TOOL_SAID)]
        assert len(said) == 1, said
        assert said[0].startswith(TOOL_SAID + "Remembered"), said  # the tool ran
        assert owner.logged("discord_answer_relayed")
