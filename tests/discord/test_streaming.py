"""Answers stream as edits within the channel's bucket, the final is the model's text once,
split at 2,000 characters, in Discord's Markdown (tables as code blocks); 429s wait
their retry_after; a post that fails in transit is retried under its nonce, never shown
twice."""

from __future__ import annotations

import pytest

from tests.discord.harness import World, running_bot
from tests.fakes.discord_api import DiscordFake
from thalos_bot.providers.scripted import Say, ScriptedProvider

pytestmark = pytest.mark.anyio

PROSE = (
    "Streaming is when the answer shows up while it is being written. "
    "It makes a slow model feel quick, and it lets you stop an answer early. "
    "This sentence is here to make the stream last a little longer."
)
CREATE = "POST /channels/{channel_id}/messages"
EDIT = "PATCH /channels/{channel_id}/messages/{message_id}"


def squeezed(text: str) -> str:
    return "".join(text.split())


def streamed(text: str, *, delay: float = 0.01, size: int = 6) -> ScriptedProvider:
    return ScriptedProvider(
        [[Say(*[text[i : i + size] for i in range(0, len(text), size)], delay=delay)]]
    )


async def test_an_answer_streams_as_edits_of_one_message_within_the_bucket(
    fake: DiscordFake, world: World
) -> None:
    async with running_bot(fake, world, streamed(PROSE)) as bot:
        fake.say_dm(world.owner, "explain streaming")
        await fake.wait_for(lambda: fake.texts(bot.dm()) == [PROSE])
    (message,) = [m for m in fake.messages(bot.dm()) if m["author"]["id"] == str(fake.bot_id)]
    history = fake.world.history[int(message["id"])]
    assert len(history) >= 2, "the answer showed while it was written"
    assert all(PROSE.startswith(text) for text in history), "never a wrong text"
    assert fake.limits.refused == [], "the edits kept within the bucket: no 429"


async def test_a_long_answer_is_split_at_2000_characters(fake: DiscordFake, world: World) -> None:
    long = "\n\n".join(f"Paragraph {i}: " + "words " * 60 for i in range(12))
    async with running_bot(fake, world, ScriptedProvider([[Say(long)]])) as bot:
        fake.say_dm(world.owner, "write a lot")
        texts = await bot.texts(bot.dm(), 3)
        await fake.wait_for(lambda: squeezed("".join(fake.texts(bot.dm()))) == squeezed(long))
    assert all(len(t) <= 2000 for t in fake.texts(bot.dm()))
    assert texts[0].startswith("Paragraph 0")


async def test_tables_become_code_blocks(fake: DiscordFake, world: World) -> None:
    table = "Here:\n\n| name | qty |\n|---|---|\n| apple | 3 |\n| kiwi | 12 |\n"
    async with running_bot(fake, world, ScriptedProvider([[Say(table)]])) as bot:
        fake.say_dm(world.owner, "a table please")
        (text,) = await bot.texts(bot.dm(), 1)
    assert "```\nname  │ qty\n──────┼────\napple │ 3\nkiwi  │ 12\n```" in text
    assert "|" not in text


async def test_a_429_waits_its_retry_after(fake: DiscordFake, world: World) -> None:
    async with running_bot(fake, world, streamed(PROSE, delay=0.02)) as bot:
        fake.limits.forced[EDIT] = 0.3
        fake.say_dm(world.owner, "explain streaming")
        await fake.wait_for(lambda: fake.texts(bot.dm()) == [PROSE])
    assert fake.limits.refused == [EDIT], "the one forced 429, nothing more"
    # The fixture checks that no request reached the bucket before the 429's retry_after.


async def test_a_post_lost_in_transit_is_retried_under_its_nonce_and_shown_once(
    fake: DiscordFake, world: World
) -> None:
    async with running_bot(fake, world, ScriptedProvider([[Say("exactly once")]])) as bot:
        fake.rest.drop_after[CREATE] = 1
        fake.say_dm(world.owner, "hi")
        await fake.wait_for(lambda: fake.nonce_hits)
        await bot.texts(bot.dm(), 1)
    assert fake.texts(bot.dm()) == ["exactly once"]
    (message,) = [m for m in fake.messages(bot.dm()) if m["author"]["id"] == str(fake.bot_id)]
    assert fake.nonce_hits == [message["nonce"]], "the retry carried the first try's nonce"
