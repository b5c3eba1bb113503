"""The bot never goes silently deaf: dropped connections, gateway errors and a stalled
long poll are logged and recovered from; a 409 Conflict ends the daemon with its own
exit code after bounded retries."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from tests.fakes.telegram_api import TelegramFake
from tests.telegram.harness import running_bot
from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot_telegram import EXIT_TELEGRAM_CONFLICT

pytestmark = pytest.mark.anyio


def events(logs: list[MutableMapping[str, Any]], name: str) -> list[MutableMapping[str, Any]]:
    return [entry for entry in logs if entry["event"] == name]


@pytest.mark.parametrize(
    "fault",
    ["drop", "close", "502"],
    ids=["dropped-before-processing", "closed-after-processing", "bad-gateway"],
)
async def test_polling_recovers_from_network_failures(fake: TelegramFake, fault: str) -> None:
    if fault == "drop":
        fake.drop_next("getUpdates", times=3)
    elif fault == "close":
        fake.timeout_next("getUpdates", times=3, close=True)
    else:
        fake.fail_next("getUpdates", 502, times=3)
    with capture_logs() as logs:
        async with running_bot(fake) as bot:
            bot.say("are you there?")
            assert await bot.answer() == ["You said: are you there?"]
    failed = events(logs, "telegram_poll_failed")
    assert [entry["attempt"] for entry in failed] == [1, 2, 3]
    assert all(entry["log_level"] == "warning" for entry in failed)
    (recovered,) = events(logs, "telegram_poll_recovered")
    assert recovered["after_failures"] == 3


async def test_a_stalled_long_poll_is_restarted_by_the_watchdog(fake: TelegramFake) -> None:
    fake.timeout_next("getUpdates")  # Telegram never answers this one
    with capture_logs() as logs:
        async with running_bot(fake, poll_timeout=1, stall_timeout=1.5, request_timeout=30) as bot:
            await fake.wait_for(lambda: fake.calls("getUpdates"))
            bot.say("hello?")
            # Without the watchdog the HTTP read timeout (31 s) would be the first to notice.
            assert await bot.answer(timeout=10) == ["You said: hello?"]
    assert events(logs, "telegram_poll_stalled")
    assert events(logs, "telegram_poll_restarted")


async def _run_until_fatal(fake: TelegramFake, **overrides: Any) -> ChannelFatalError:
    with pytest.raises(BaseExceptionGroup) as caught, anyio.fail_after(20):
        async with running_bot(fake, **overrides):
            await anyio.sleep_forever()
    fatal = [e for e in _leaves(caught.value) if isinstance(e, ChannelFatalError)]
    assert len(fatal) == 1, caught.value
    return fatal[0]


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


async def test_a_persistent_conflict_ends_with_its_exit_code(fake: TelegramFake) -> None:
    fake.fail_next("getUpdates", 409, times=100)
    with capture_logs() as logs:
        fatal = await _run_until_fatal(fake, conflict_retries=3)
    assert fatal.exit_code == EXIT_TELEGRAM_CONFLICT == 78
    assert "another process is polling Telegram with the same bot token" in fatal.message
    assert fake.token not in fatal.message
    assert len(fake.calls("getUpdates")) == 4, "the first try and three retries"
    assert len(fake.calls("getWebhookInfo")) == 1, "the cause is checked once"
    assert fake.calls("deleteWebhook") == [], "never removes a webhook on its own"
    conflicts = events(logs, "telegram_conflict")
    assert [entry["attempt"] for entry in conflicts] == [1, 2, 3]
    assert all(entry["log_level"] == "error" for entry in conflicts)


async def test_a_webhook_is_named_as_the_cause(fake: TelegramFake) -> None:
    fake.set_webhook("https://example.org/hook")
    fatal = await _run_until_fatal(fake, conflict_retries=1)
    assert fatal.exit_code == EXIT_TELEGRAM_CONFLICT
    assert "a webhook is set for this bot" in fatal.message
    assert fake.webhook_url == "https://example.org/hook"


async def test_a_passing_conflict_is_survived(fake: TelegramFake) -> None:
    fake.fail_next("getUpdates", 409, times=2)
    with capture_logs() as logs:
        async with running_bot(fake, conflict_retries=3) as bot:
            bot.say("still here?")
            assert await bot.answer() == ["You said: still here?"]
    assert len(events(logs, "telegram_conflict")) == 2
    assert events(logs, "telegram_conflict_resolved")
