"""Delivery under faults: Slack's redeliveries, a dropped socket mid-answer, and posts
whose answer never came (checked by their metadata before being sent again)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.slack_api import SlackFake
from tests.slack.harness import CHANNEL, USER, running_bot
from thalos_bot.providers.scripted import Say, ScriptedProvider

pytestmark = pytest.mark.anyio


async def test_an_event_redelivered_after_a_lost_ack_starts_no_second_turn(
    fake: SlackFake, tmp_path: Path
) -> None:
    fake.socket.ack_timeout = 0.5
    provider = ScriptedProvider([[Say("one answer")], [Say("a second turn!")]])
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="off") as bot:
        fake.lose_acks(1)
        bot.say("hi")
        (envelope,) = [e for e in fake.socket.envelopes.values() if e.type == "events_api"]
        await fake.wait_for(lambda: envelope.acked and envelope.attempt == 1)
        assert envelope.reason == "timeout"
        await bot.shows(["one answer"])
        bot.say("!status")  # a later message: the redelivery is behind us
        await bot.answer(2)
    assert len(provider.requests) == 1


async def test_a_mention_comes_twice_and_is_answered_once(fake: SlackFake, tmp_path: Path) -> None:
    provider = ScriptedProvider([[Say("once")], [Say("twice!")]])
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="off") as bot:
        root = bot.say(f"<@{fake.workspace.bot_user}> hi", channel=CHANNEL)
        await bot.shows(["once"], channel=CHANNEL, thread_ts=root)
        kinds = [e.payload["event"]["type"] for e in fake.socket.envelopes.values()]
        envelopes = list(fake.socket.envelopes.values())
        await fake.wait_for(lambda: all(e.acked for e in envelopes))
    assert {"message", "app_mention"} <= set(kinds)
    assert len(provider.requests) == 1


async def test_a_socket_dropped_mid_answer_loses_nothing(fake: SlackFake, tmp_path: Path) -> None:
    words = [f"word{i} " for i in range(40)]
    provider = ScriptedProvider([[Say(*words, delay=0.02)], [Say("after the drop")]])
    async with running_bot(fake, provider, tmp_path=tmp_path) as bot:
        dm = fake.dm(USER)
        bot.say("talk")
        await fake.wait_for(lambda: fake.messages(dm))  # the answer is streaming
        fake.drop_connections()
        bot.say("are you there?")  # sent while the bot is not connected: not lost
        await fake.wait_for(lambda: fake.socket.connections >= 2)
        full = "".join(words).strip()

        def both() -> list[str] | None:  # the answer, and "still working" for the new message
            texts = fake.texts(dm)
            return texts if len(texts) == 2 and full in texts else None

        texts = await fake.wait_for(both)
        assert any("Still working" in text for text in texts)
        bot.say("and now?")
        await bot.fake.wait_for(lambda: fake.texts(dm)[-1] == "after the drop")
    assert len(provider.requests) == 2


async def test_a_disconnect_envelope_is_followed_by_a_new_connection(
    fake: SlackFake, tmp_path: Path
) -> None:
    provider = ScriptedProvider([[Say("still here")]])
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="off") as bot:
        fake.send_disconnect("refresh_requested")
        await fake.wait_for(lambda: fake.socket.connections >= 2)
        bot.say("hello")
        await bot.shows(["still here"])


async def test_a_post_whose_answer_was_lost_is_found_not_sent_twice(
    fake: SlackFake, tmp_path: Path
) -> None:
    provider = ScriptedProvider([[Say("exactly once")]])
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="off") as bot:
        fake.lose_answer("chat.postMessage")
        bot.say("hi")
        await bot.shows(["exactly once"])
        await fake.wait_for(lambda: fake.calls_of("conversations.history"))
    (probe,) = fake.calls_of("conversations.history")
    assert probe["include_all_metadata"] == "true"
    assert len(fake.calls_of("chat.postMessage")) == 1
    (message,) = fake.messages(fake.dm(USER))
    assert message.metadata is not None
    assert message.metadata["event_type"] == "thalos_part"


async def test_a_post_cut_off_before_it_arrived_is_sent_again(
    fake: SlackFake, tmp_path: Path
) -> None:
    provider = ScriptedProvider([[Say("sent again")]])
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="off") as bot:
        fake.drop_request("chat.postMessage")
        bot.say("hi")
        await bot.shows(["sent again"])
    assert len(fake.calls_of("conversations.history")) == 1, "checked before sending again"
    assert len(fake.messages(fake.dm(USER))) == 1
