"""What goes out besides streamed text: tool images as files after the answer, and an
outbox row a restarted daemon resumes, its nonces keeping every part shown once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

from tests.discord.harness import World, running_bot
from tests.fakes.discord_api import DiscordFake
from thalos_bot.channels import notices
from thalos_bot.channels.final import ConfirmingAdapter
from thalos_bot.channels.ports import Notice
from thalos_bot.channels.text.split import split
from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.domain.events import ToolImage
from thalos_bot.domain.ids import ConversationId
from thalos_bot.providers.scripted import CallTool, Say, ScriptedProvider
from thalos_bot.tools.types import ToolCall, ToolContext, ToolResult, ToolSpec
from thalos_bot_discord.wire import LIMIT

pytestmark = pytest.mark.anyio

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


class Drawer:
    def specs_for(self, agent: AgentDefinition) -> list[ToolSpec]:
        return [ToolSpec("draw__chart", "draws")]

    async def call(self, call: ToolCall, context: ToolContext) -> ToolResult:
        image = ToolImage(context.session_id, call.name, "image/png", PNG)
        return ToolResult(f"[image: image/png, {len(PNG)} bytes, not shown]", images=(image,))


@dataclass
class Journal:
    """One outbox row as the channel sees it (the port, kept in memory)."""

    progress: Mapping[str, object] = field(default_factory=dict)
    saves: list[Mapping[str, object]] = field(default_factory=list)
    confirmed: bool = False
    refused: bool = False

    async def save(self, progress: Mapping[str, object]) -> None:
        self.progress = dict(progress)
        self.saves.append(self.progress)

    async def confirm(self) -> None:
        self.confirmed = True

    async def refuse(self) -> None:
        self.refused = True


async def test_a_tool_image_goes_out_as_a_file_after_the_answer(
    fake: DiscordFake, world: World
) -> None:
    provider = ScriptedProvider([[Say("Drawing."), CallTool("draw__chart")], [Say("Here it is.")]])
    async with running_bot(fake, world, provider) as bot:
        bot.runtime.tools = Drawer()
        fake.say_dm(world.owner, "chart please")
        await fake.wait_for(lambda: any(m["attachments"] for m in fake.messages(bot.dm())))
    mine = [m for m in fake.messages(bot.dm()) if m["author"]["id"] == str(fake.bot_id)]
    assert [m["content"] for m in mine] == [
        "Drawing.\n\nHere it is.",
        notices.tool_image("draw__chart", "image/png", len(PNG)),
    ]
    (attachment,) = mine[1]["attachments"]
    assert attachment["filename"] == "image.png"
    assert fake.world.files[attachment["url"]] == PNG


async def test_a_restarted_daemon_resumes_a_final_without_showing_a_part_twice(
    fake: DiscordFake, world: World
) -> None:
    long = "\n\n".join(f"Part {i}: " + "words " * 300 for i in range(3))
    parts = [part.text for part in split(long, None, LIMIT)]  # as the engine cuts
    assert len(parts) >= 2
    conversation = ConversationId(f"dm:{world.owner}")
    dm = fake.dm_channel_id(world.owner)
    # The first process noted part 0's key in the row, posted it under that nonce, then
    # died before it heard back.
    journal = Journal({"parts_done": 0, "key": "0123456789abcdef"})
    with fake.lock:
        fake.world.post(
            dm,
            fake.world.bot,
            {"content": parts[0], "nonce": "0123456789abcdef", "enforce_nonce": True},
        )
    async with running_bot(fake, world) as bot:
        adapter = bot.pair.adapter
        assert isinstance(adapter, ConfirmingAdapter)
        await adapter.deliver_final(conversation, long, journal, ends_turn=True)
        await fake.wait_for(lambda: journal.confirmed)
    assert fake.texts(dm) == parts, "each part once: the resent part 0 was recognised by its nonce"
    assert fake.nonce_hits == ["0123456789abcdef"]


async def test_a_burst_past_the_global_limit_reaches_everyone_once(
    fake: DiscordFake, world: World
) -> None:
    """Twice Discord's global limit in one go (a DM opened and a notice posted to each of
    40 people): the channel paces itself under 50 requests a second, so the global 429,
    which would close every route to the bot, never comes; nothing is lost or doubled."""
    people = [fake.add_user(f"p{i}") for i in range(40)]
    async with running_bot(fake, world) as bot:
        for person in people:
            await bot.pair.adapter.deliver(ConversationId(f"dm:{person}"), Notice("maintenance"))
        await fake.wait_for(
            lambda: all(fake.texts(fake.dm_channel_id(p)) for p in people), timeout=30
        )
    assert "global" not in fake.limits.refused, "the burst met Discord's global limit"
    assert all(fake.texts(fake.dm_channel_id(p)) == ["maintenance"] for p in people)


async def test_model_text_pings_nobody(fake: DiscordFake, world: World) -> None:
    """A prompt injection's mass mention (@everyone, @here, a role, a person) reaches the
    channel as text, pinging no one: every post and every edit carries allowed_mentions."""
    hostile = f"@everyone @here <@&{world.owner}> <@{world.owner}> <@!{world.owner}> look"
    provider = ScriptedProvider([[Say("Streaming @here first, "), Say(hostile)]])
    async with running_bot(fake, world, provider) as bot:
        fake.say_dm(world.owner, "hi")
        await fake.wait_for(lambda: any("look" in t for t in fake.texts(bot.dm())))
    assert any("@everyone" in t for t in fake.texts(bot.dm())), "the text itself is shown"
    assert fake.world.pinged == []


async def test_a_dm_opened_but_its_answer_lost_is_written_once(
    fake: DiscordFake, world: World
) -> None:
    """The connection drops after Discord opened the DM: the write is in doubt, made
    again (the DM asked for again is the same one), and shown once."""
    person = fake.add_user("p")
    fake.rest.drop_after["POST /users/@me/channels"] = 1
    async with running_bot(fake, world) as bot:
        await bot.pair.adapter.deliver(ConversationId(f"dm:{person}"), Notice("maintenance"))
        await fake.wait_for(lambda: fake.texts(fake.dm_channel_id(person)))
    assert fake.texts(fake.dm_channel_id(person)) == ["maintenance"]
    opened = [route for route, _ in fake.rest.calls if route == "POST /users/@me/channels"]
    assert len(opened) == 2, "the lost answer was asked for again"
