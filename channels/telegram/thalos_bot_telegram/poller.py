"""Long polling with getUpdates: at-most-once hand-over, reconnects, 409, a watchdog.

At most once: a batch of updates is handed over only after a getUpdates carrying an
offset beyond it has succeeded (a quick ``timeout=0`` call), so Telegram has forgotten
them before any turn runs. A crash mid-turn loses that message rather than running a
turn (that may have written a memory or called a tool) a second time.

Never silently deaf: every failed round trip is logged and retried, and the recovery is
logged too. While Telegram cannot be reached or answers 5xx, the retries back off
exponentially with jitter but only up to ``poll_retry_max`` (1.5 s by default): a
failing getUpdates costs Telegram next to nothing, and the bot hears again within that
long of the outage's end. Errors that say how long to wait are waited out in full: 429
(``retry_after``) and 409 (its own backoff); anything else backs off up to
``backoff_max``. Each update of a batch is decoded on its own, so one that cannot be
read is logged (by id, never its content) and skipped. A 409 Conflict (another poller on
the token, or a webhook) is named, retried a bounded number of times, then ends the
daemon with :data:`~thalos_bot_telegram.EXIT_TELEGRAM_CONFLICT`. A watchdog restarts a
getUpdates that stays in flight past ``stall_after`` seconds, whatever the cause.
"""

from __future__ import annotations

import math
import random
from collections.abc import Awaitable, Callable, Sequence
from time import monotonic

import anyio
import structlog
from telegram import Bot, Update
from telegram.error import TelegramError

from thalos_bot.channels.health import ChannelHealth
from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot.domain.unreachable import unreachable_cause
from thalos_bot_telegram import EXIT_TELEGRAM_CONFLICT, EXIT_TELEGRAM_UNAUTHORIZED, TOKEN_ENV
from thalos_bot_telegram.backoff import Backoff
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.errors import (
    Classified,
    Failure,
    classify,
    describe,
)
from thalos_bot_telegram.updates import Batch, fetch_batch

log = structlog.get_logger(__name__)

ALLOWED_UPDATES = ("message", "callback_query")
TRANSIENT = frozenset({Failure.NOT_SENT, Failure.MAYBE_SENT})
"""Telegram unreachable, 5xx, timeouts: probe often, the outage may end any moment."""

Sleep = Callable[[float], Awaitable[None]]

WEBHOOK_CAUSE = (
    "a webhook is set for this bot, and Telegram refuses getUpdates while one is. "
    "thalos-bot uses long polling: remove the webhook (Bot API deleteWebhook) or stop "
    "whatever set it"
)
POLLER_CAUSE = (
    "another process is polling Telegram with the same bot token (another thalos-bot "
    "instance, or another program using this bot). Only one poller per token is "
    "possible: stop the other one"
)


class Poller:
    def __init__(
        self,
        bot: Bot,
        config: TelegramConfig,
        dispatch: Callable[[Sequence[Update]], None],
        *,
        sleep: Sleep = anyio.sleep,
        clock: Callable[[], float] = monotonic,
    ) -> None:
        """``sleep`` and ``clock`` time the retries (the watchdog keeps real time)."""
        self.bot = bot
        self.config = config
        self.dispatch = dispatch
        self._sleep = sleep
        self._clock = clock
        self.offset = 0
        self.round_trips = 0
        self.restarts = 0
        self.receiving = anyio.Event()
        """Set once a getUpdates has come back: the channel really receives."""
        self.health = ChannelHealth()
        """The last poll that came back, and the last that failed (for ``status``)."""
        self.failed_once = anyio.Event()
        """Set when a poll has failed: the channel is started and retrying."""
        self._pending: tuple[Update, ...] = ()
        probe_max = config.poll_retry_max
        self._probe = Backoff(min(config.backoff_initial, probe_max), probe_max)
        self._backoff = Backoff(config.backoff_initial, config.backoff_max)
        self._failures = 0
        self._failing_since = 0.0
        self._conflicts = 0
        self._conflict_cause: str | None = None
        self._serial = 0
        self._inflight: tuple[int, float] | None = None
        self._inflight_changed = anyio.Event()
        self._scope: anyio.CancelScope | None = None

    async def run(self) -> None:
        """Poll until cancelled; raises :class:`ChannelFatalError` when polling cannot go
        on (409 Conflict that persists, or the token rejected)."""
        async with anyio.create_task_group() as group:
            group.start_soon(self._watchdog)
            while True:
                with anyio.CancelScope() as scope:
                    self._scope = scope
                    await self._poll_forever()
                self.restarts += 1
                log.warning("telegram_poll_restarted", restarts=self.restarts)

    async def _poll_forever(self) -> None:
        long_poll = max(1, math.ceil(self.config.poll_timeout))
        while True:
            # The first call returns at once: the channel counts as receiving (and the
            # daemon reports READY) as soon as Telegram has answered one poll.
            wait = 0 if self._pending or not self.receiving.is_set() else long_poll
            try:
                batch = await self._get_updates(wait)
            except TelegramError as exc:
                await self._failed(exc)
                continue
            self._succeeded()
            if self._pending:  # acknowledged by the call that just succeeded
                acknowledged, self._pending = self._pending, ()
                self.dispatch(acknowledged)
            await self._take(batch)

    async def _take(self, batch: Batch) -> None:
        for bad in batch.unreadable:
            log.warning("telegram_update_unreadable", update_id=bad.update_id, error=bad.error)
        if batch.next_offset is not None:
            self.offset = max(self.offset, batch.next_offset)
            self._pending = batch.updates
        elif not batch.empty:
            # Nothing in it carried an update id, so nothing can be acknowledged: asking
            # again at once would get the same batch back. Never seen from Telegram.
            delay = self._backoff.next_delay()
            log.error("telegram_batch_unreadable", items=len(batch.unreadable), retry_in=delay)
            await self._sleep(delay)

    async def _get_updates(self, wait: int) -> Batch:
        self._serial += 1
        self._inflight = (self._serial, monotonic())
        self._inflight_changed.set()
        try:
            return await fetch_batch(
                self.bot,
                offset=self.offset,
                wait=wait,
                allowed_updates=ALLOWED_UPDATES,
                read_timeout=self.config.request_timeout,
            )
        finally:
            self._inflight = None

    def _succeeded(self) -> None:
        self.round_trips += 1
        self.receiving.set()
        self.health.ok()
        self._probe.reset()
        self._backoff.reset()
        if self._failures:
            log.info(
                "telegram_poll_recovered",
                after_failures=self._failures,
                down_s=round(self._clock() - self._failing_since, 1),
            )
            self._failures = 0
        if self._conflicts:
            log.info("telegram_conflict_resolved", after_conflicts=self._conflicts)
            self._conflicts = 0
            self._conflict_cause = None

    async def _failed(self, exc: TelegramError) -> None:
        failure = classify(exc)
        self.health.failed(_health_reason(failure, exc))
        self.failed_once.set()
        if failure.failure is Failure.CONFLICT:
            await self._conflict()
            return
        if failure.failure in {Failure.UNAUTHORIZED, Failure.UNSUPPORTED}:
            raise ChannelFatalError(
                f"telegram: the bot token in {TOKEN_ENV} was rejected by Telegram "
                "(revoked or wrong?); get a valid one from @BotFather",
                EXIT_TELEGRAM_UNAUTHORIZED,
            )
        if not self._failures:
            self._failing_since = self._clock()
        self._failures += 1
        if failure.failure is Failure.RETRY_AFTER:
            delay = failure.retry_after or 1.0
            log.warning("telegram_poll_flood_wait", retry_after=delay)
        else:
            backoff = self._probe if failure.failure in TRANSIENT else self._backoff
            delay = backoff.next_delay()
            log.warning(
                "telegram_poll_failed",
                attempt=self._failures,
                retry_in=round(delay, 2),
                failure=failure.failure.value,
                reason=failure.reason,
            )
        await self._sleep(delay)

    async def _conflict(self) -> None:
        self._conflicts += 1
        if self._conflict_cause is None:
            self._conflict_cause = await self._diagnose_conflict()
        retries = self.config.conflict_retries
        if self._conflicts > retries:
            log.error("telegram_conflict_fatal", cause=self._conflict_cause, retries=retries)
            raise ChannelFatalError(
                f"telegram: 409 Conflict from getUpdates persisted after {retries} "
                f"retries: {self._conflict_cause}",
                EXIT_TELEGRAM_CONFLICT,
            )
        base = self.config.conflict_backoff * 2 ** (self._conflicts - 1)
        delay = min(self.config.conflict_backoff_max, base) * random.uniform(0.75, 1.25)  # noqa: S311
        log.error(
            "telegram_conflict",
            cause=self._conflict_cause,
            attempt=self._conflicts,
            retries=retries,
            retry_in=round(delay, 2),
        )
        await self._sleep(delay)

    async def _diagnose_conflict(self) -> str:
        """Ask Telegram once whether a webhook is the cause (we never delete it)."""
        try:
            info = await self.bot.get_webhook_info(read_timeout=self.config.request_timeout)
        except TelegramError as exc:
            log.warning("telegram_webhook_info_failed", reason=describe(exc))
            return POLLER_CAUSE + " (or a webhook is set: could not check)"
        return WEBHOOK_CAUSE if info.url else POLLER_CAUSE

    async def _watchdog(self) -> None:
        stall_after = self.config.stall_after
        while True:
            current = self._inflight
            if current is None:
                await self._inflight_changed.wait()
                self._inflight_changed = anyio.Event()
                continue
            serial, started = current
            await anyio.sleep(max(0.0, started + stall_after - monotonic()))
            still = self._inflight
            if still is not None and still[0] == serial and self._scope is not None:
                log.warning(
                    "telegram_poll_stalled",
                    seconds=round(monotonic() - started, 1),
                    note="no answer to getUpdates; restarting the poll loop",
                )
                self._scope.cancel()
                self._inflight_changed = anyio.Event()  # wait for the restarted request
                await self._inflight_changed.wait()


def _health_reason(failure: Classified, exc: TelegramError) -> str:
    """What ``status`` shows for a failed poll: words, not the exception's text."""
    if failure.failure is Failure.RETRY_AFTER:
        return f"flood control: retry after {failure.retry_after:g}s"
    if failure.failure is Failure.CONFLICT:
        return "409 Conflict: another poller uses this token (or a webhook is set)"
    if failure.failure in TRANSIENT:
        return f"Telegram unreachable: {unreachable_cause(exc)}"
    return f"getUpdates failed ({failure.failure.value})"
