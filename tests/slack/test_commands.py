"""The six commands: typed as text (``!new``; Slack keeps ``/`` for slash commands) in
a DM or a thread, and through the ``/thalos`` slash command."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.slack_api import SlackFake
from tests.slack.harness import CHANNEL, STRANGER, USER, running_bot
from thalos_bot.providers.scripted import Say, ScriptedProvider

pytestmark = pytest.mark.anyio


async def test_typed_commands_never_reach_the_model(fake: SlackFake, tmp_path: Path) -> None:
    provider = ScriptedProvider([[Say("hello")]])
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="off") as bot:
        bot.say("!help")
        (help_text,) = await bot.answer()
        assert "/new" in help_text
        bot.say("hi")
        await bot.answer(2)
        bot.say("!new")
        texts = await bot.answer(3)
    assert texts[1] == "hello"
    assert len(provider.requests) == 1


async def test_a_command_in_a_thread_goes_to_that_threads_conversation(
    fake: SlackFake, tmp_path: Path
) -> None:
    provider = ScriptedProvider([[Say("answer")]])
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="off") as bot:
        root = bot.say(f"<@{fake.workspace.bot_user}> hi", channel=CHANNEL)
        await bot.shows(["answer"], channel=CHANNEL, thread_ts=root)
        bot.say("!status", channel=CHANNEL, thread_ts=root)
        texts = await bot.answer(2, channel=CHANNEL, thread_ts=root)
    assert len(texts) == 2
    assert texts[1] != "answer"


async def test_the_slash_command_runs_its_text_as_a_command(
    fake: SlackFake, tmp_path: Path
) -> None:
    async with running_bot(fake, tmp_path=tmp_path, streaming="off") as bot:
        dm = fake.dm(USER)
        envelope = fake.slash(USER, dm, "/thalos", "help")
        (help_text,) = await bot.answer()
        await fake.wait_for(lambda: envelope.acked)
        stranger = fake.slash(STRANGER, fake.dm(STRANGER), "/thalos", "help")
        await fake.wait_for(lambda: stranger.acked)
        in_channel = fake.slash(USER, CHANNEL, "/thalos", "new")
        await fake.wait_for(lambda: in_channel.acked)
    assert "/new" in help_text
    assert fake.messages(fake.dm(STRANGER)) == []
    assert not (stranger.response or {}).get("text"), "a stranger is told nothing"
    assert "!new" in str((in_channel.response or {}).get("text"))


async def test_slack_markup_reaches_the_model_as_plain_words(
    fake: SlackFake, tmp_path: Path
) -> None:
    """The bot's own mention goes; a user, a channel, a special mention and a link are
    words; Slack's escapes are read back once; ``/new`` not first is text."""
    provider = ScriptedProvider([[Say("one")], [Say("two")]])
    bot_user = fake.workspace.bot_user
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="off") as bot:
        bot.say(f"<@{bot_user}>  ask <@U0ANN|ann> in <#C0GEN|general> via <https://e.org|docs>")
        await bot.answer()
        bot.say("<!here> a &lt;b&gt; &amp;amp; <https://e.org> then /new")
        await bot.answer(2)
    assert [request.messages[-1].text for request in provider.requests] == [
        "ask @ann in #general via docs (https://e.org)",
        "@here a <b> &amp; https://e.org then /new",
    ]
