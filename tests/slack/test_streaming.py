"""Answers stream natively in threads (chat.startStream/appendStream/stopStream), by
edits elsewhere or where the workspace lacks streaming; the final shows once, split
under Slack's limits, with Tier limits and Retry-After obeyed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.slack_api import SlackFake
from tests.slack.harness import CHANNEL, USER, running_bot
from thalos_bot.providers.scripted import Say, ScriptedProvider
from thalos_bot_slack.wire import TEXT_PART

pytestmark = pytest.mark.anyio

PROSE = (
    "Streaming is when the answer shows up while it is being written. "
    "It makes a slow model feel quick, and it lets you stop an answer early. "
    "This sentence is here to make the stream last a little longer."
)


def streamed(text: str, *, delay: float = 0.01, size: int = 6) -> ScriptedProvider:
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    return ScriptedProvider([[Say(*pieces, delay=delay)]])


async def test_a_thread_answer_streams_natively_and_ends_as_the_full_text(
    fake: SlackFake, tmp_path: Path
) -> None:
    mention = f"<@{fake.workspace.bot_user}> explain"
    async with running_bot(fake, streamed(PROSE), tmp_path=tmp_path) as bot:
        root = bot.say(mention, channel=CHANNEL)
        await bot.shows([PROSE], channel=CHANNEL, thread_ts=root)
    (start,) = fake.calls_of("chat.startStream")
    assert start["thread_ts"] == root
    assert start["recipient_user_id"] == USER
    assert start["recipient_team_id"] == fake.workspace.team_id
    appends = fake.calls_of("chat.appendStream")
    (message,) = fake.messages(CHANNEL)
    assert all(PROSE.startswith(shown) for shown in message.history), "only ever a prefix"
    (stop,) = fake.calls_of("chat.stopStream")
    assert len(message.history) == 1 + len(appends) + (1 if stop.get("markdown_text") else 0)
    assert fake.calls_of("chat.postMessage") == []
    assert fake.calls_of("chat.update") == [], "the stream already showed it all"


async def test_without_streaming_in_the_workspace_the_answer_is_edited_in_place(
    fake: SlackFake, tmp_path: Path
) -> None:
    fake.web.streaming_supported = False
    mention = f"<@{fake.workspace.bot_user}> explain"
    provider = ScriptedProvider(
        [[Say(*[PROSE[i : i + 6] for i in range(0, len(PROSE), 6)], delay=0.01)]] * 2
    )
    async with running_bot(fake, provider, tmp_path=tmp_path) as bot:
        root = bot.say(mention, channel=CHANNEL)
        await bot.shows([PROSE], channel=CHANNEL, thread_ts=root)
        bot.say("again", channel=CHANNEL, thread_ts=root)
        await bot.shows([PROSE, PROSE], channel=CHANNEL, thread_ts=root)
    assert len(fake.calls_of("chat.postMessage")) == 2
    assert fake.errors().count(("chat.startStream", "feature_not_enabled")) == 1, (
        "asked once; then the process knows"
    )
    for message in fake.messages(CHANNEL):
        assert all(PROSE.startswith(shown) for shown in message.history)


async def test_a_dm_answer_is_one_message_edited_on_the_cadence(
    fake: SlackFake, tmp_path: Path
) -> None:
    async with running_bot(fake, streamed(PROSE), tmp_path=tmp_path) as bot:
        bot.say("explain")
        await bot.shows([PROSE])
        flushes = len(bot.adapter.flushes)
    (_message,) = fake.messages(fake.dm(USER))
    assert 1 <= len(fake.calls_of("chat.update")) <= flushes, "at most one edit per flush"
    assert fake.calls_of("chat.startStream") == [], "a DM's top level does not stream"


async def test_streaming_off_posts_the_final_only(fake: SlackFake, tmp_path: Path) -> None:
    async with running_bot(fake, streamed(PROSE), tmp_path=tmp_path, streaming="off") as bot:
        bot.say("explain")
        await bot.shows([PROSE])
    assert len(fake.calls_of("chat.postMessage")) == 1
    assert fake.calls_of("chat.update") == []


async def test_a_long_answer_is_split_under_the_limit_and_shown_once(
    fake: SlackFake, tmp_path: Path
) -> None:
    paragraph = "word " * 150 + "\n\n"
    text = (paragraph * 20).strip()
    words = " ".join(text.split())
    async with running_bot(fake, streamed(text, size=400), tmp_path=tmp_path) as bot:
        bot.say("write a lot")
        parts = len(text) // TEXT_PART + 1
        dm = fake.dm(USER)
        # Full parts are finished messages while the rest still streams: wait for the end.
        await fake.wait_for(lambda: " ".join(" ".join(fake.texts(dm)).split()) == words)
        texts = fake.texts(dm)
    assert len(texts) == parts
    assert all(len(t) <= TEXT_PART for t in texts)
    assert " ".join(" ".join(texts).split()) == words, "every word, once"


async def test_markdown_becomes_mrkdwn_and_slack_markup_is_escaped(
    fake: SlackFake, tmp_path: Path
) -> None:
    answer = "# Plan\n**Bold**, _it_, ~~gone~~, [docs](https://example.com) and <!channel> & co"
    async with running_bot(
        fake, ScriptedProvider([[Say(answer)]]), tmp_path=tmp_path, streaming="off"
    ) as bot:
        bot.say("format")
        (text,) = await bot.answer()
    assert text == (
        "*Plan*\n*Bold*, _it_, ~gone~, <https://example.com|docs> and &lt;!channel&gt; &amp; co"
    )


async def test_a_429_is_waited_out_for_its_retry_after(fake: SlackFake, tmp_path: Path) -> None:
    async with running_bot(fake, streamed(PROSE), tmp_path=tmp_path, streaming="off") as bot:
        fake.rate_limit_next("chat.postMessage", 1, channel=fake.dm(USER))
        bot.say("explain")
        await bot.shows([PROSE])
    assert ("chat.postMessage", "ratelimited") in fake.errors()
    # The fixture fails the test if any call came before its Retry-After had passed.


async def test_a_tier_methods_429_holds_every_conversation(fake: SlackFake, tmp_path: Path) -> None:
    """chat.update's limit is the workspace's: once Slack told one conversation to wait,
    another does not edit before the Retry-After has passed either (the fixture counts
    any call that does)."""
    users = ["U0PEER0", "U0PEER1"]
    pieces = [PROSE[i : i + 6] for i in range(0, len(PROSE), 6)]
    provider = ScriptedProvider([[Say(*pieces, delay=0.02)]] * len(users))
    async with running_bot(
        fake, provider, tmp_path=tmp_path, streaming="edit", allowed_users=users
    ) as bot:
        fake.rate_limit_next("chat.update", 1)
        fake.say(users[0], "explain")
        await fake.wait_for(lambda: ("chat.update", "ratelimited") in fake.errors())
        fake.say(users[1], "explain")
        for user in users:
            await bot.shows([PROSE], channel=fake.dm(user))
    assert fake.errors().count(("chat.update", "ratelimited")) == 1


async def test_tier_limits_hold_across_conversations(fake: SlackFake, tmp_path: Path) -> None:
    users = [f"U0PEER{i}" for i in range(6)]
    provider = ScriptedProvider([[Say(PROSE)]] * len(users))
    async with running_bot(
        fake, provider, tmp_path=tmp_path, streaming="off", allowed_users=users
    ) as bot:
        for user in users:
            fake.say(user, "hi")
        for user in users:
            await bot.shows([PROSE], channel=fake.dm(user))
    assert "ratelimited" not in {error for _, error in fake.errors()}, "paced, never refused"


async def test_a_stream_whose_start_went_unanswered_is_found_and_finished_once(
    fake: SlackFake, tmp_path: Path
) -> None:
    """chat.startStream took effect but its answer was lost: the stream is found in the
    thread and finished there, not left open under a second copy of the answer."""
    mention = f"<@{fake.workspace.bot_user}> explain"
    async with running_bot(fake, streamed(PROSE), tmp_path=tmp_path) as bot:
        fake.lose_answer("chat.startStream")
        root = bot.say(mention, channel=CHANNEL)
        await bot.shows([PROSE], channel=CHANNEL, thread_ts=root)
        await fake.wait_for(
            lambda: not any(m.streaming for m in fake.messages(CHANNEL, thread_ts=root))
        )
    assert len(fake.calls_of("chat.startStream")) == 1
    assert len(fake.calls_of("conversations.replies")) >= 1, "it looked before going on"
    assert fake.calls_of("chat.postMessage") == [], "no second copy"


async def test_a_stream_slack_closed_early_is_finished_by_edits(
    fake: SlackFake, tmp_path: Path
) -> None:
    """An append refused because the stream is no longer open: the preview is closed
    and edited like any message from then on, and still ends as the full text once."""
    mention = f"<@{fake.workspace.bot_user}> explain"
    async with running_bot(fake, streamed(PROSE), tmp_path=tmp_path) as bot:
        fake.fail_next("chat.appendStream", "message_not_in_streaming_state")
        root = bot.say(mention, channel=CHANNEL)
        await bot.shows([PROSE], channel=CHANNEL, thread_ts=root)
        await fake.wait_for(
            lambda: not any(m.streaming for m in fake.messages(CHANNEL, thread_ts=root))
        )
    assert len(fake.calls_of("chat.startStream")) == 1
    assert fake.calls_of("chat.update"), "edited once the stream was closed"
    assert fake.calls_of("chat.postMessage") == [], "no second message"
