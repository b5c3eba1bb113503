"""A message reaches the pump only once its catch-up mark is written: a ``kill -9`` in
its turn then leaves the mark behind it, so the next start's catch-up (which reads from
the marks) never hands it over again, and the turn journal's "interrupted" is the only
word about it (see :mod:`thalos_bot.channels.inlet`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

import anyio
import pytest

from tests.discord import harness
from tests.discord.harness import World, running_bot
from tests.fakes.discord_api import DiscordFake
from tests.waits import settled
from thalos_bot.channels.inlet import Arrival, Inlet
from thalos_bot.channels.ports import InboundMessage
from thalos_bot.domain.ids import ChannelId
from thalos_bot.providers.scripted import Say, ScriptedProvider
from thalos_bot.storage.chat_marks import SqliteChatMarks

pytestmark = pytest.mark.anyio


class HeldMarks(SqliteChatMarks):
    """The host's marks, whose writes wait for :attr:`release` (a slow disk)."""

    writing = anyio.Event()
    release = anyio.Event()

    async def raise_marks(self, channel_id: ChannelId, marks: Mapping[str, int]) -> None:
        HeldMarks.writing.set()
        await HeldMarks.release.wait()
        await super().raise_marks(channel_id, marks)


async def test_the_pump_has_a_message_only_once_its_mark_is_written(
    fake: DiscordFake, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    HeldMarks.writing, HeldMarks.release = anyio.Event(), anyio.Event()
    monkeypatch.setattr(harness, "SqliteChatMarks", HeldMarks)
    had: list[str] = []
    messages = Inlet.messages

    async def watched(inlet: Inlet) -> AsyncIterator[Arrival]:
        async for arrival in messages(inlet):
            if isinstance(arrival, InboundMessage):
                had.append(arrival.text)  # the pump has it from here
            yield arrival

    monkeypatch.setattr(Inlet, "messages", watched)
    async with running_bot(fake, world, ScriptedProvider([[Say("hi")]])) as bot:
        try:
            fake.say_dm(world.owner, "hello")
            with anyio.fail_after(10):
                await HeldMarks.writing.wait()
            await settled()  # the pump took what it could
            assert had == [], "the pump had the message before its mark was written"
        finally:
            HeldMarks.release.set()  # the channel's closing flush writes too
        assert await bot.texts(bot.dm(), 1) == ["hi"]
    assert had == ["hello"]


async def test_a_message_the_pump_never_took_before_a_stop_is_caught_up_on_after_it(
    fake: DiscordFake, world: World
) -> None:
    """A stop while a message's file still downloads: the pump never had it, so its
    mark must not be written either; the next start's catch-up answers it, once."""
    provider = ScriptedProvider([[Say("one")], [Say("read it")]])
    async with running_bot(fake, world, provider) as bot:
        fake.say_dm(world.owner, "first")
        await bot.texts(bot.dm(), 1)
        fake.files_served.clear()
        fake.say_dm(world.owner, "what does it say?", attachments=[("notes.txt", b"buy milk")])
        await fake.wait_for(lambda: fake.downloads_begun == 1)
    assert len(provider.requests) == 1, "stopped before the pump had it"
    fake.files_served.set()
    async with running_bot(fake, world, provider) as bot:
        assert await bot.texts(bot.dm(), 2) == ["one", "read it"]
    assert len(provider.requests) == 2
    assert "buy milk" in str(provider.requests[1].messages[-1].content)
