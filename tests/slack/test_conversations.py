"""Who gets an answer, and where: DMs, mention-started threads, nobody else."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.slack_api import SlackFake
from tests.slack.harness import CHANNEL, STRANGER, UNLISTED, USER, make_config, running_bot
from tests.telegram.harness import CATALOG
from thalos_bot.channels.ports import EXIT_UNAUTHORIZED, ChannelFatalError
from thalos_bot.channels.registry import ChannelHost
from thalos_bot.config.models import Settings
from thalos_bot.providers.scripted import Say, ScriptedProvider
from thalos_bot_slack import APP_TOKEN_ENV
from thalos_bot_slack.manifest import manifest as plugin

pytestmark = pytest.mark.anyio


async def test_a_direct_message_is_answered_in_the_dm(fake: SlackFake, tmp_path: Path) -> None:
    provider = ScriptedProvider([[Say("Hello **there**")]])
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="edit") as bot:
        bot.say("hi")
        await bot.shows(["Hello *there*"])
    (message,) = fake.messages(fake.dm(USER))
    assert message.thread_ts is None, "a DM is answered at its top level"


async def test_a_mention_in_a_listed_channel_starts_a_thread_that_needs_no_more_mentions(
    fake: SlackFake, tmp_path: Path
) -> None:
    provider = ScriptedProvider([[Say("first answer")], [Say("second answer")]])
    bot_user = fake.workspace.bot_user
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="edit") as bot:
        root = bot.say(f"<@{bot_user}> what is up?", channel=CHANNEL)
        assert await bot.answer(channel=CHANNEL, thread_ts=root) == ["first answer"]
        bot.say("and then?", channel=CHANNEL, thread_ts=root)
        texts = await bot.answer(2, channel=CHANNEL, thread_ts=root)
    assert texts == ["first answer", "second answer"]
    assert provider.pending == 0
    first = provider.requests[0].messages[-1]
    assert "what is up?" in str(first.content)
    assert bot_user not in str(first.content)


async def test_strangers_unlisted_channels_and_unmentioned_messages_get_nothing(
    fake: SlackFake, tmp_path: Path
) -> None:
    provider = ScriptedProvider([[Say("only this")]])
    bot_user = fake.workspace.bot_user
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="edit") as bot:
        fake.say(STRANGER, "hello?")
        fake.say(STRANGER, f"<@{bot_user}> hi", channel=CHANNEL)
        bot.say(f"<@{bot_user}> hi", channel=UNLISTED)
        bot.say("no mention here", channel=CHANNEL)
        other = fake.say(STRANGER, "a thread the bot never joined", channel=CHANNEL)
        bot.say("a reply in it", channel=CHANNEL, thread_ts=other)
        bot.say("now me")  # the one message that is answered, after all the others
        assert await bot.answer() == ["only this"]
        envelopes = list(fake.socket.envelopes.values())
        await fake.wait_for(lambda: all(e.acked for e in envelopes))
    assert fake.messages(CHANNEL) == []
    assert fake.messages(UNLISTED) == []
    assert fake.messages(fake.dm(STRANGER)) == []
    assert len(provider.requests) == 1


async def test_assistant_threads_make_each_dm_thread_a_conversation(
    fake: SlackFake, tmp_path: Path
) -> None:
    provider = ScriptedProvider([[Say("in thread one")], [Say("in thread two")]])
    async with running_bot(
        fake, provider, tmp_path=tmp_path, streaming="edit", assistant_threads=True
    ) as bot:
        dm = fake.dm(USER)
        one = bot.say("first topic")
        assert await bot.answer(channel=dm, thread_ts=one) == ["in thread one"]
        two = bot.say("second topic")
        assert await bot.answer(channel=dm, thread_ts=two) == ["in thread two"]
    assert len(provider.requests[1].messages) == 1, "a new thread starts a new session"
    statuses = fake.calls_of("assistant.threads.setStatus")
    assert [s["thread_ts"] for s in statuses] == [one, two], "is thinking… in each thread"


async def test_a_wrong_app_token_stops_the_channel_at_once(
    fake: SlackFake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(APP_TOKEN_ENV, "xapp-not-the-one")
    host = ChannelHost.of(Settings(), CATALOG, tmp_path)
    with pytest.raises(ChannelFatalError) as stopped:
        async with plugin.open(make_config(fake), host):
            pass
    assert stopped.value.exit_code == EXIT_UNAUTHORIZED
    assert "invalid_auth" in stopped.value.message
    assert "xapp-not-the-one" not in stopped.value.message
