"""What was said while no socket was connected is read back from the history and
answered once: after a stop, after a socket reconnect, also when Slack delivers it too,
and never again after a later restart; a 429 on the history is waited out, and a
conversation whose history cannot be read does not keep the others from being caught up.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.fakes.slack_api import SlackFake
from tests.slack.harness import CHANNEL, USER, Bot, running_bot

pytestmark = pytest.mark.anyio

HISTORY = "conversations.history"


def echo(text: str) -> str:
    return f"You said: {text}"


async def greeted(bot: Bot) -> None:
    """A first message, answered live: the DM's mark is kept."""
    bot.say("hello")
    await bot.shows([echo("hello")])


async def said_while_stopped(
    fake: SlackFake, tmp_path: Path, text: str = "said while stopped", *, heard: bool = False
) -> None:
    """A first run that answers the DM, then ``text`` said while the daemon is stopped
    (not ``heard``: Slack gave its event up; else it keeps it for the next connection)."""
    async with running_bot(fake, tmp_path=tmp_path, streaming="off") as bot:
        await greeted(bot)
    fake.say(USER, text, heard=heard)


async def answered_then(bot: Bot, expected: list[str], *, channel: str | None = None) -> None:
    """Wait for ``expected`` to be shown, then say one more live message and wait for its
    answer: an answer given twice would show before that one (the pump answers a
    conversation's messages in order)."""
    await bot.shows(expected, channel=channel)
    bot.say("and now?")
    await bot.shows([*expected, echo("and now?")], channel=channel)


async def test_a_message_said_while_the_daemon_was_stopped_is_answered_once_after_the_start(
    fake: SlackFake, tmp_path: Path
) -> None:
    await said_while_stopped(fake, tmp_path)
    async with running_bot(fake, tmp_path=tmp_path, streaming="off") as bot:
        await answered_then(bot, [echo("hello"), echo("said while stopped")])


async def test_a_message_said_during_a_socket_reconnect_is_answered_once(
    fake: SlackFake, tmp_path: Path
) -> None:
    async with running_bot(fake, tmp_path=tmp_path, streaming="off") as bot:
        await greeted(bot)
        connections = fake.socket.connections
        fake.say(USER, "said while the socket was down", heard=False)
        fake.drop_connections()
        await fake.wait_for(lambda: fake.socket.connections > connections)
        await answered_then(bot, [echo("hello"), echo("said while the socket was down")])


async def test_a_message_caught_up_on_and_also_delivered_is_answered_once(
    fake: SlackFake, tmp_path: Path
) -> None:
    await said_while_stopped(fake, tmp_path, "both ways", heard=True)
    envelope = fake.socket.envelopes[fake.socket.order[-1]]
    async with running_bot(fake, tmp_path=tmp_path, streaming="off") as bot:
        await fake.wait_for(lambda: envelope.acked)  # delivered live
        await fake.wait_for(lambda: fake.calls_of(HISTORY))  # and read back
        await answered_then(bot, [echo("hello"), echo("both ways")])


async def test_a_restart_after_the_catch_up_answers_nothing_again(
    fake: SlackFake, tmp_path: Path
) -> None:
    # Three starts open Socket Mode six times in a few seconds (the app token's check,
    # then the connection), and apps.connections.open is Tier 1: room for them, since
    # the SDK's connect does not wait out a 429 there (not what this test is about).
    fake.limits.burst = 6
    await said_while_stopped(fake, tmp_path)
    async with running_bot(fake, tmp_path=tmp_path, streaming="off") as bot:
        await bot.shows([echo("hello"), echo("said while stopped")])
    read = len(fake.calls_of(HISTORY))
    async with running_bot(fake, tmp_path=tmp_path, streaming="off") as bot:
        await fake.wait_for(lambda: len(fake.calls_of(HISTORY)) > read)
        await answered_then(bot, [echo("hello"), echo("said while stopped")])


async def test_a_429_on_the_history_is_waited_out_and_the_messages_still_come(
    fake: SlackFake, tmp_path: Path
) -> None:
    await said_while_stopped(fake, tmp_path)
    fake.rate_limit_next(HISTORY, seconds=1)
    async with running_bot(fake, tmp_path=tmp_path, streaming="off") as bot:
        await answered_then(bot, [echo("hello"), echo("said while stopped")])
    assert fake.limits.limited.count(HISTORY) == 1, "told to wait once, then let through"
    # the fixture checks that no call went out before the Retry-After had passed


async def test_a_429_on_the_history_holds_the_reads_and_no_answer(
    fake: SlackFake, tmp_path: Path
) -> None:
    """A non-Marketplace app's history is 1 call a minute: its 429 must not hold every
    answer of the workspace for that minute."""
    await said_while_stopped(fake, tmp_path)
    fake.rate_limit_next(HISTORY, seconds=60)
    async with running_bot(fake, tmp_path=tmp_path, streaming="off") as bot:
        await fake.wait_for(lambda: HISTORY in fake.limits.limited)
        bot.say("meanwhile")
        await bot.shows([echo("hello"), echo("meanwhile")])


async def test_a_conversation_whose_history_fails_is_logged_and_the_others_are_caught_up(
    fake: SlackFake, tmp_path: Path
) -> None:
    async with running_bot(fake, tmp_path=tmp_path, streaming="off") as bot:
        await greeted(bot)
        mention = f"<@{fake.workspace.bot_user}> in the channel"
        bot.say(mention, channel=CHANNEL)
        await bot.shows([echo("in the channel")], channel=CHANNEL)
    with fake._lock:
        fake.workspace.conversations[CHANNEL].members.discard(fake.workspace.bot_user)
    fake.say(USER, "said while stopped", heard=False)
    with capture_logs() as logs:
        async with running_bot(fake, tmp_path=tmp_path, streaming="off") as bot:
            await answered_then(bot, [echo("hello"), echo("said while stopped")])
    failed = [dict(e) for e in logs if e["event"] == "slack_catch_up_failed"]
    assert failed == [
        {
            "event": "slack_catch_up_failed",
            "chat": CHANNEL,
            "error": "not_in_channel",
            "log_level": "warning",
        }
    ]


async def test_chatter_the_bot_saw_is_not_read_back(fake: SlackFake, tmp_path: Path) -> None:
    """In a listed channel, what is said without a mention is not for the bot, but it
    was seen: the channel's mark passes it, and the next start reads the history from
    after it (before, from the last message taken: all the chatter since, every time,
    and a warning once it passed the 100 read back)."""
    async with running_bot(fake, tmp_path=tmp_path, streaming="off") as bot:
        bot.say(f"<@{fake.workspace.bot_user}> in the channel", channel=CHANNEL)
        await bot.shows([echo("in the channel")], channel=CHANNEL)
        chatter = fake.say(USER, "talking among ourselves", channel=CHANNEL)
        await fake.wait_for(lambda: fake.socket.envelopes[fake.socket.order[-1]].acked)
    async with running_bot(fake, tmp_path=tmp_path, streaming="off"):
        await fake.wait_for(
            lambda: any(c.get("channel") == CHANNEL for c in fake.calls_of(HISTORY))
        )
        [read] = [c for c in fake.calls_of(HISTORY) if c.get("channel") == CHANNEL]
        assert read["oldest"] == chatter
