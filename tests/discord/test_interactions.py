"""Buttons and slash commands: approvals pressable by the owner only, the six commands
registered as application commands and run through interactions, files in and out."""

from __future__ import annotations

import io
from typing import Any

import pytest
from PIL import Image

from tests.discord.harness import Bot, World, running_bot
from tests.fakes.discord_api import DiscordFake
from tests.media.transcribing import transcribing, words_sent
from tests.tools.test_gate import FsSource, ListAudit
from thalos_bot.channels.approvals.asking import OUTCOMES
from thalos_bot.channels.notices import COMMAND_ARGUMENTS, COMMANDS
from thalos_bot.domain.messages import ImageBlock
from thalos_bot.providers.scripted import CallTool, Say, ScriptedProvider
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot.tools.gate import PermissionGate
from thalos_bot.tools.policy import PolicySet, ToolPolicy

pytestmark = pytest.mark.anyio


def tools() -> tuple[SourceCatalog, FsSource]:
    source, audit = FsSource(), ListAudit()
    policies = PolicySet([ToolPolicy("fs__write_*", action="ask")])
    gate = PermissionGate(policies, timeout=30, audit=audit)
    return SourceCatalog([source], policies, gate=gate), source


async def question(bot: Bot) -> dict[str, Any]:
    def asked() -> dict[str, Any] | None:
        for message in bot.fake.messages(bot.dm()):
            if message["components"]:
                return message
        return None

    return await bot.fake.wait_for(asked)


def button(message: dict[str, Any], label: str) -> str:
    for row in message["components"]:
        for item in row["components"]:
            if item["label"] == label:
                return str(item["custom_id"])
    raise AssertionError(f"no {label!r} button")


async def test_an_approval_is_asked_with_buttons_and_only_the_owner_can_press(
    fake: DiscordFake, world: World
) -> None:
    catalog, source = tools()
    provider = ScriptedProvider(
        [[CallTool("fs__write_file", {"path": "a.md", "content": "x"})], [Say("written")]]
    )
    async with running_bot(fake, world, provider, tools=catalog) as bot:
        fake.say_dm(world.owner, "write it")
        asked = await question(bot)
        assert "fs__write_file" in asked["content"]
        allow = button(asked, "Approve")
        fake.press(int(asked["id"]), world.stranger, allow)
        await fake.wait_for(lambda: len(fake.callbacks) == 1)
        kind, data = fake.callbacks[0][1:]
        assert (kind, data["flags"]) == (4, 64), "the stranger is told, privately"
        assert source.calls == [], "nothing ran on a stranger's press"
        fake.press(int(asked["id"]), world.owner, allow)
        await fake.wait_for(lambda: "written" in fake.texts(bot.dm()))
    assert [tool for tool, _ in source.calls] == ["write_file"]
    closed = next(m for m in fake.messages(bot.dm()) if m["id"] == asked["id"])
    assert closed["components"] == [], "the buttons are gone once decided"
    assert f"{OUTCOMES['approved']} by" in closed["content"]
    assert fake.callbacks[1][1] == 6, "the owner's press is acknowledged in place"


async def test_slash_commands_are_registered_and_run_like_typed_ones(
    fake: DiscordFake, world: World
) -> None:
    async with running_bot(fake, world, ScriptedProvider()) as bot:
        await fake.wait_for(lambda: len(fake.world.commands) == len(COMMANDS))
        fake.invoke(bot.dm(), world.owner, "help")
        texts = await bot.texts(bot.dm(), 2)
        fake.invoke(world.unlisted, world.owner, "help")
        await fake.wait_for(lambda: len(fake.callbacks) == 2)
    assert texts[0] == "`/help`", "the interaction is answered at once with the command"
    assert "/new" in texts[1]
    assert fake.callbacks[1][2]["flags"] == 64, "an unlisted channel is refused privately"
    new = next(c for c in fake.world.commands if c["name"] == "new")
    assert [o["name"] for o in new["options"]] == ["agent"]
    link = next(c for c in fake.world.commands if c["name"] == "link")
    assert [(o["name"], o["required"]) for o in link["options"]] == [("code", False)]


async def test_every_command_that_takes_an_argument_is_given_it(
    fake: DiscordFake, world: World
) -> None:
    async with running_bot(fake, world, ScriptedProvider()) as bot:
        await fake.wait_for(lambda: len(fake.world.commands) == len(COMMANDS))
        fake.invoke(bot.dm(), world.owner, "remember", {"text": "the milk"})
        said = await bot.texts(bot.dm(), 2)
    options = {c["name"]: [o["name"] for o in c.get("options", [])] for c in fake.world.commands}
    assert {name: names for name, names in options.items() if names} == {
        name: [option] for name, (option, _) in COMMAND_ARGUMENTS.items()
    }
    assert said[0] == "`/remember the milk`", "run as if typed, the argument with it"


async def test_an_image_attachment_reaches_the_model(fake: DiscordFake, world: World) -> None:
    png = io.BytesIO()
    Image.new("RGB", (32, 16), "red").save(png, "PNG")
    async with running_bot(fake, world, ScriptedProvider([[Say("a red box")]])) as bot:
        fake.say_dm(world.owner, "what is this?", attachments=[("box.png", png.getvalue())])
        await bot.texts(bot.dm(), 1)
    (request,) = bot.provider.requests
    (image,) = [b for b in request.messages[-1].content if isinstance(b, ImageBlock)]
    assert image.media_type == "image/png"


async def test_a_file_that_cannot_be_read_is_refused_with_a_notice(
    fake: DiscordFake, world: World
) -> None:
    async with running_bot(fake, world, ScriptedProvider()) as bot:
        fake.say_dm(world.owner, "run this", attachments=[("tool.exe", b"MZ\x90\x00")])
        (text,) = await bot.texts(bot.dm(), 1)
    assert "tool.exe" in text
    assert bot.provider.requests == []


async def test_a_voice_message_is_transcribed_shown_back_and_answered(
    fake: DiscordFake, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    with transcribing(monkeypatch, " is it going to rain ") as (stt, settings):
        provider = ScriptedProvider([[Say("Not today.")]])
        async with running_bot(fake, world, provider, settings=settings) as bot:
            fake.say_dm(world.owner, "", voice=(b"OggS fake opus", 2.5))
            texts = await bot.texts(bot.dm(), 2)
    assert texts == ["🎤 is it going to rain", "Not today."]
    assert words_sent(provider) == ["is it going to rain"]
    (call,) = stt.requests
    assert call.filename == "voice.ogg"


async def test_a_voice_message_without_transcription_gets_a_notice(
    fake: DiscordFake, world: World
) -> None:
    async with running_bot(fake, world, ScriptedProvider()) as bot:
        fake.say_dm(world.owner, "", voice=(b"OggS fake opus", 1.0))
        (text,) = await bot.texts(bot.dm(), 1)
    assert "[transcription]" in text
    assert bot.provider.requests == []
