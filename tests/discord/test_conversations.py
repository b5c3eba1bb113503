"""Who the Discord bot answers, and where: DMs of allowed users; in servers only listed
channels, allowed users, on a mention or a reply; strangers get nothing."""

from __future__ import annotations

import pytest

from tests.discord.harness import Bot, World, running_bot
from tests.fakes.discord_api import DiscordFake
from thalos_bot.providers.scripted import Say, ScriptedProvider

pytestmark = pytest.mark.anyio


def answers(*texts: str) -> ScriptedProvider:
    return ScriptedProvider([[Say(t)] for t in texts])


async def settle(bot: Bot) -> None:
    """Let the bot answer one probe in its DM, so that anything before it was handled."""
    before = len(bot.fake.texts(bot.dm()))
    bot.fake.say_dm(bot.world.owner, "probe")
    await bot.texts(bot.dm(), before + 1)


async def test_a_direct_message_is_a_conversation(fake: DiscordFake, world: World) -> None:
    async with running_bot(fake, world, answers("hello there")) as bot:
        fake.say_dm(world.owner, "hi")
        assert await bot.texts(bot.dm(), 1) == ["hello there"]
    (message,) = [m for m in fake.messages(bot.dm()) if m["author"]["id"] == str(fake.bot_id)]
    assert message["nonce"], "every post carries a nonce (with enforce_nonce)"


async def test_servers_answer_only_mentions_and_replies_of_allowed_users_in_listed_channels(
    fake: DiscordFake, world: World
) -> None:
    async with running_bot(fake, world, answers("first", "second", "probe-answer")) as bot:
        fake.say_in(world.listed, world.owner, "no mention")
        fake.say_in(world.unlisted, world.owner, "wrong channel", mention=True)
        fake.say_in(world.listed, world.stranger, "a stranger", mention=True)
        fake.say_dm(world.stranger, "a stranger's dm")
        fake.say_in(world.listed, world.owner, "now with a mention", mention=True)
        (first,) = await bot.texts(world.listed, 1)
        mine = next(m for m in fake.messages(world.listed) if m["author"]["id"] == str(fake.bot_id))
        fake.say_in(world.listed, world.owner, "a reply", reply_to=int(mine["id"]))
        texts = await bot.texts(world.listed, 2)
        await settle(bot)
    assert [first, *texts[1:]] == ["first", "second"]
    assert fake.texts(world.unlisted) == []
    assert fake.texts(fake.dm_channel_id(world.stranger)) == []
    assert len(bot.provider.requests) == 3, (
        "only the mention, the reply and the probe reached the model"
    )
    assert bot.provider.requests[0].messages[-1].text == "now with a mention", (
        "the mention is not passed on"
    )


async def test_a_mention_inside_the_text_is_taken_out_with_its_words_joined(
    fake: DiscordFake, world: World
) -> None:
    async with running_bot(fake, world, answers("fine")) as bot:
        fake.say_in(world.listed, world.owner, "Hello {bot}, how are you?", mention=True)
        await bot.texts(world.listed, 1)
    assert bot.provider.requests[0].messages[-1].text == "Hello, how are you?"


async def test_threads_answer_each_mention_in_a_thread_of_its_own(
    fake: DiscordFake, world: World
) -> None:
    async with running_bot(
        fake, world, answers("in the thread", "still there"), threads=True
    ) as bot:
        mention = fake.say_in(world.listed, world.owner, "plan the trip", mention=True)
        texts = await bot.texts(mention, 1)
        fake.say_in(mention, world.owner, "and the budget?")
        texts = await bot.texts(mention, 2)
    assert texts == ["in the thread", "still there"]
    assert fake.texts(world.listed) == [], "the answer is in the thread, not the channel"
    assert fake.world.channels[mention]["name"] == "plan the trip"


async def test_the_six_commands_work_as_typed_text(fake: DiscordFake, world: World) -> None:
    async with running_bot(fake, world, answers()) as bot:
        fake.say_dm(world.owner, "/help")
        (text,) = await bot.texts(bot.dm(), 1)
    assert "/new" in text
    assert "/cancel" in text
    assert bot.provider.requests == [], "a command never reaches the model"
