"""The bot never goes silently deaf: dropped connections, gateway errors and a stalled
long poll are logged and recovered from; a 409 Conflict ends the daemon with its own
exit code after bounded retries."""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs
from telegram import Update

from tests.fakes.telegram_api import TelegramFake
from tests.fakes.telegram_gateway import Gateway, Outage
from tests.telegram.harness import USER, make_config, running_bot
from thalos_bot.channels.ports import EXIT_PLATFORM_SETTING, ChannelFatalError
from thalos_bot_telegram.client import build_bot
from thalos_bot_telegram.poller import Poller

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
    assert fatal.exit_code == EXIT_PLATFORM_SETTING == 78
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
    assert fatal.exit_code == EXIT_PLATFORM_SETTING
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


class VirtualTime:
    """The poller's clock and sleep: retries wait in virtual seconds (no real waiting).
    An outage staged on the gateway ends once the virtual clock reaches its end."""

    def __init__(self, gateway: Gateway, fake: TelegramFake) -> None:
        self.now = 0.0
        self.slept: list[float] = []
        self._gateway = gateway
        self._fake = fake
        self.outage_end: float | None = None
        self.heard_at: float | None = None

    def __call__(self) -> float:
        return self.now

    def begin_outage(self, kind: Outage, seconds: float) -> None:
        self.outage_end = self.now + seconds
        self._gateway.down(kind)

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        ended = self.outage_end is not None and self.now >= self.outage_end
        if ended and self._gateway.state != "up":
            self._gateway.up()
            self._fake.push_text(USER, USER, "back?")  # the first message after it
        await anyio.sleep(0)


async def _poll_through_outage(
    fake: TelegramFake, kind: Outage, seconds: float, **overrides: Any
) -> tuple[VirtualTime, list[MutableMapping[str, Any]], list[int]]:
    """Poll until receiving, stage the outage, and return once a message sent the moment
    it ended has been received."""
    with Gateway(fake.base_url) as gateway:
        clock = VirtualTime(gateway, fake)
        received = anyio.Event()
        texts: list[str] = []

        def dispatch(updates: Sequence[Update]) -> None:
            texts.extend(u.message.text for u in updates if u.message and u.message.text)
            if clock.heard_at is None and "back?" in texts:
                clock.heard_at = clock.now
                received.set()

        config = make_config(
            fake,
            base_url=gateway.base_url,
            backoff_initial=1.0,
            backoff_max=60.0,
            **overrides,
        )
        with capture_logs() as logs:
            async with build_bot(fake.token, config) as bot, anyio.create_task_group() as group:
                poller = Poller(bot, config, dispatch, sleep=clock.sleep, clock=clock)
                group.start_soon(poller.run)
                await poller.receiving.wait()
                clock.begin_outage(kind, seconds)
                with anyio.fail_after(30):
                    await received.wait()
                group.cancel_scope.cancel()
    failures = [int(e["attempt"]) for e in events(logs, "telegram_poll_failed")]
    return clock, logs, failures


@pytest.mark.parametrize("kind", ["refused", "502"])
@pytest.mark.parametrize("seconds", [20, 60])
async def test_after_an_outage_the_bot_hears_again_within_poll_timeout_plus_2s(
    fake: TelegramFake, kind: Outage, seconds: int
) -> None:
    clock, logs, failures = await _poll_through_outage(fake, kind, seconds, poll_timeout=1)
    assert clock.outage_end is not None
    assert clock.heard_at is not None
    late = clock.heard_at - clock.outage_end
    assert 0 <= late <= 1 + 2, f"heard again {late:.1f} s after the outage ended"
    # It kept backing off against the failing server: no tight loop, growing waits up
    # to poll_retry_max (1.5 s), so at most about one probe a second.
    assert len(failures) <= seconds / (1.5 * 0.75) + 2
    assert all(wait >= 0.75 for wait in clock.slept)
    assert clock.slept[1] > clock.slept[0] * 1.2 / 1.25 or clock.slept[1] >= 1.5 * 0.75
    (recovered,) = events(logs, "telegram_poll_recovered")
    assert recovered["after_failures"] == len(failures)
    assert recovered["down_s"] >= seconds
    assert {e["failure"] for e in events(logs, "telegram_poll_failed")} <= {
        "not_sent",
        "maybe_sent",
    }


async def test_a_flood_wait_on_get_updates_is_waited_out_in_full(fake: TelegramFake) -> None:
    fake.fail_next("getUpdates", 429, retry_after=2)
    with capture_logs() as logs:
        async with running_bot(fake, poll_retry_max=0.2) as bot:
            bot.say("patience")
            assert await bot.answer() == ["You said: patience"]
    assert fake.retry_after_violations == [], "retry_after is kept, not capped like a probe"
    (flood,) = events(logs, "telegram_poll_flood_wait")
    assert flood["retry_after"] == 2
