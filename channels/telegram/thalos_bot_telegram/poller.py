"""Long polling with getUpdates: at-most-once hand-over, reconnects, 409, a watchdog.

At most once: a batch is handed over only after a getUpdates with an offset beyond it
succeeded (a quick ``timeout=0`` call); the plug-in holds it until the pump takes it. A
crash mid-turn loses that message rather than running a turn (that may have written a
memory or called a tool) a second time.

Never silently deaf: every failed round trip is logged and retried, and the recovery is
logged too. While Telegram cannot be reached or answers 5xx, the retries back off
exponentially with jitter but only up to ``poll_retry_max`` (1.5 s by default): a
failing getUpdates costs Telegram next to nothing, and the bot hears again within that
long of the outage's end. Errors that say how long to wait are waited out in full: 429
(``retry_after``) and 409 (its own backoff); anything else backs off up to
``backoff_max``. Each update of a batch is decoded on its own, so one that cannot be
read is logged (by id, never its content) and skipped. A 409 Conflict (another poller on
the token, or a webhook) is named, retried a bounded number of times, then ends the
daemon with :data:`~thalos_bot.channels.ports.EXIT_PLATFORM_SETTING`. A watchdog restarts a
getUpdates that stays in flight past ``stall_after`` seconds, whatever the cause.

Caught up on request (:meth:`Poller.caught_up`, for the check of a send in doubt, see
:mod:`thalos_bot_telegram.uncertain`): it returns once a getUpdates *begun after the
request* has come back with less than a full batch and what it brought has been handed
over. A long poll in flight (begun before) is cut short for it; the updates a cut call
may have been given are not lost, as only the next offset confirms them. Once polling
has ended (shutdown, while answers drain), it *peeks* instead (:attr:`Poller.peeked`),
confirming nothing: the next process gets what it finds.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from time import monotonic

import anyio
import structlog
from telegram import Bot, Update
from telegram.error import TelegramError

from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.channels.health import ChannelHealth
from thalos_bot.channels.pacing.backoff import Backoff
from thalos_bot.channels.ports import EXIT_PLATFORM_SETTING, EXIT_UNAUTHORIZED, ChannelFatalError
from thalos_bot.domain.unreachable import unreachable_cause
from thalos_bot_telegram import TOKEN_ENV
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.errors import classify, describe
from thalos_bot_telegram.updates import Batch, fetch_batch

log = structlog.get_logger(__name__)

FULL_BATCH = 100
"""getUpdates' default limit: a batch this long may have left updates behind."""
TRANSIENT = frozenset({Failure.NOT_SENT, Failure.MAYBE_SENT})
"""Telegram unreachable, 5xx, timeouts: probe often, the outage may end any moment."""

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
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        clock: Callable[[], float] = monotonic,
    ) -> None:
        """``sleep`` and ``clock`` time the retries (the watchdog keeps real time)."""
        self.bot = bot
        self.config = config
        self.dispatch = dispatch
        self._sleep = sleep
        self._clock = clock
        self.offset = 0
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
        self._conflict_backoff = Backoff(config.conflict_backoff, config.conflict_backoff_max)
        self._failures = 0
        self._failing_since = 0.0
        self._conflict_cause: str | None = None
        self._serial = 0
        self._inflight: tuple[int, float] | None = None
        self._inflight_changed = anyio.Event()
        self._scope: anyio.CancelScope | None = None
        self._long_poll: anyio.CancelScope | None = None
        self._pending_round = 0
        """The round that fetched :attr:`_pending`, if it brought all that was held."""
        self._caught = 0
        """The latest round whose updates were all handed over, and nothing was left."""
        self._wanted = 0
        self._caught_changed = anyio.Event()
        self._stopped = False
        self.peeked: Callable[[Sequence[Update]], None] = lambda updates: None
        """Shown the updates a peek found (after polling ended), never handed over."""
        self.before_ack: Callable[[Sequence[Update]], Awaitable[None]] | None = None
        """Shown each batch before it is acknowledged (the plug-in holds it until the
        pump takes it; the adapter notes its ids and writes the account's mark)."""

    async def caught_up(self) -> bool:
        """Return True once every update Telegram held when this was called has been
        handed over; False if polling ended first."""
        target = self._serial + 1  # a call begun after now
        self._wanted = max(self._wanted, target)
        if self._long_poll is not None:
            self._long_poll.cancel()  # begun before now: ask again at once
        while self._caught < target:
            if self._stopped:
                return await self._peek()
            await self._caught_changed.wait()
        return True

    async def _peek(self) -> bool:
        """Polling has ended: see what Telegram holds, confirming nothing (False if it
        cannot be seen whole)."""
        # Fetched but not handed over yet: asked for again, so as not to confirm them.
        held = [u.update_id for u in self._pending]
        offset = min(held) if held else self.offset
        for _ in range(3):
            try:
                batch = await fetch_batch(self.bot, offset, 0, self.config.request_timeout)
            except TelegramError as exc:
                log.warning("telegram_peek_failed", reason=describe(exc))
                await self._sleep(self._probe.next_delay())
                continue
            self.peeked(batch.updates)
            return len(batch.updates) + len(batch.unreadable) < FULL_BATCH
        return False

    def _caught_round(self, serial: int) -> None:
        if serial > self._caught:
            self._caught = serial
            self._caught_changed.set()
            self._caught_changed = anyio.Event()

    async def run(self) -> None:
        """Poll until cancelled; raises :class:`ChannelFatalError` when polling cannot go
        on (409 Conflict that persists, or the token rejected)."""
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._watchdog)
                while True:
                    with anyio.CancelScope() as scope:
                        self._scope = scope
                        await self._poll_forever()
                    self.restarts += 1
                    log.warning("telegram_poll_restarted", restarts=self.restarts)
        finally:
            self._stopped = True
            self._caught_changed.set()

    async def _poll_forever(self) -> None:
        long_poll = max(1, math.ceil(self.config.poll_timeout))
        while True:
            # The first call returns at once: the channel counts as receiving (and the
            # daemon reports READY) as soon as Telegram has answered one poll.
            at_once = self._pending or not self.receiving.is_set() or self._wanted > self._caught
            try:
                with anyio.CancelScope() as cut:
                    self._long_poll = None if at_once else cut
                    batch = await self._get_updates(0 if at_once else long_poll)
            except TelegramError as exc:
                await self._failed(exc)
                continue
            finally:
                self._long_poll = None
            if cut.cancelled_caught:
                continue  # cut short by caught_up: asked again at once
            serial = self._serial
            self._succeeded()
            if self._pending:  # acknowledged by the call that just succeeded
                acknowledged, self._pending = self._pending, ()
                self.dispatch(acknowledged)
                self._caught_round(self._pending_round)
            await self._take(batch, serial)

    async def _take(self, batch: Batch, serial: int) -> None:
        for bad in batch.unreadable:
            log.warning("telegram_update_unreadable", update_id=bad.update_id, error=bad.error)
        whole = len(batch.updates) + len(batch.unreadable) < FULL_BATCH
        if batch.empty:
            self._caught_round(serial)
        if batch.next_offset is not None:
            self.offset = max(self.offset, batch.next_offset)
            self._pending = batch.updates
            self._pending_round = serial if whole else 0
            if batch.updates and self.before_ack is not None:
                await self.before_ack(batch.updates)
            if not batch.updates and whole:
                self._caught_round(serial)  # only unreadable ones: nothing to hand over
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
            return await fetch_batch(self.bot, self.offset, wait, self.config.request_timeout)
        finally:
            self._inflight = None

    def _succeeded(self) -> None:
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
        conflicts = self._conflict_backoff.reset()
        if conflicts:
            log.info("telegram_conflict_resolved", after_conflicts=conflicts)
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
                EXIT_UNAUTHORIZED,
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
        attempt = self._conflict_backoff.failures + 1  # each earlier one took a delay
        if self._conflict_cause is None:
            self._conflict_cause = await self._diagnose_conflict()
        retries = self.config.conflict_retries
        if attempt > retries:
            log.error("telegram_conflict_fatal", cause=self._conflict_cause, retries=retries)
            raise ChannelFatalError(
                f"telegram: 409 Conflict from getUpdates persisted after {retries} "
                f"retries: {self._conflict_cause}",
                EXIT_PLATFORM_SETTING,
            )
        delay = self._conflict_backoff.next_delay()
        log.error(
            "telegram_conflict",
            cause=self._conflict_cause,
            attempt=attempt,
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
