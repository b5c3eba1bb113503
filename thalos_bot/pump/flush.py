"""One host-wide flush cadence for streamed text.

Each conversation with a running turn has a :class:`Lane`: text deltas and tool activity
accumulate in it, and its own delivery task hands the adapter at most one
:class:`TextUpdate` per tick. A single :class:`FlushTicker` drives every lane, so the
number of timers does not grow with the number of conversations. Two things skip the
cadence. The first update of a turn goes out at once (leading edge), so the first words
show as soon as the model sends them rather than up to a tick later; from then on the
cadence applies. Terminal events are delivered as soon as any delivery already under way
returns.

A channel may ask for its own interval (:class:`PacedAdapter`; the terminal wants a
short one, Telegram keeps the pump's): the ticker runs at the finest interval asked
for, and each lane delivers on every ``every``-th tick, its channel's multiple.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from time import monotonic
from typing import Protocol, runtime_checkable

import anyio
import structlog

from thalos_bot.channels.ports import ChannelAdapter, Delivery, TextUpdate
from thalos_bot.domain.events import (
    TerminalEvent,
    ToolCallFinished,
    ToolCallStarted,
)
from thalos_bot.domain.ids import ConversationId

log = structlog.get_logger(__name__)


@runtime_checkable
class PacedAdapter(Protocol):
    """Optional for an adapter: the flush interval its channel wants, in seconds (None:
    the pump's ``flush_interval``)."""

    @property
    def flush_interval(self) -> float | None: ...


def adapter_interval(adapter: ChannelAdapter, default: float) -> float:
    wanted = adapter.flush_interval if isinstance(adapter, PacedAdapter) else None
    return wanted if wanted is not None and wanted > 0 else default


def finest_interval(default: float, adapters: Iterable[ChannelAdapter]) -> float:
    """What the one ticker runs at: the shortest interval any channel asks for."""
    return min([default, *(adapter_interval(a, default) for a in adapters)])


def ticks_per(interval: float, tick: float) -> int:
    """How many ticks of ``tick`` seconds make ``interval`` (at least one)."""
    return max(1, round(interval / tick))


class Lane:
    """The outbox of one conversation for the duration of one turn."""

    def __init__(
        self, adapter: ChannelAdapter, conversation_id: ConversationId, every: int = 1
    ) -> None:
        self.adapter = adapter
        self.conversation_id = conversation_id
        self.every = every
        """Deliver on every ``every``-th tick: the channel's interval over the ticker's."""
        self._ticks = 0
        self._text: list[str] = []
        self._activity: list[ToolCallStarted | ToolCallFinished] = []
        self._terminal: TerminalEvent | None = None
        self._due = False
        self._leading = True
        """Nothing has gone out (or been scheduled) yet this turn."""
        self._wake = anyio.Event()

    @property
    def pending(self) -> bool:
        return bool(self._text or self._activity)

    def add_text(self, text: str) -> None:
        self._text.append(text)
        self._lead()

    def add_activity(self, event: ToolCallStarted | ToolCallFinished) -> None:
        self._activity.append(event)
        self._lead()

    def tick(self) -> None:
        """Called by the ticker: on the lane's multiple, deliver what is pending, once."""
        self._ticks += 1
        if self._ticks % self.every:
            return
        if self.pending:
            self._leading = False
            self._due = True
            self._wake.set()

    def _lead(self) -> None:
        """The turn's first update is delivered at once, ahead of the cadence."""
        if self._leading:
            self._leading = False
            self._due = True
            self._wake.set()

    def finish(self, terminal: TerminalEvent) -> None:
        """Deliver ``terminal`` now (pending text is superseded by its full text)."""
        self._terminal = terminal
        self._wake.set()

    async def run(self) -> None:
        """Deliver ticks and the terminal event, in order, until the terminal is out."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            if self._terminal is not None:
                await self._deliver_terminal(self._terminal)
                return
            if self._due and self.pending:
                self._due = False
                await self._deliver_update()

    async def _deliver_update(self) -> None:
        update = TextUpdate("".join(self._text), tuple(self._activity))
        self._text.clear()
        self._activity.clear()
        await safe_deliver(self.adapter, self.conversation_id, update)

    async def _deliver_terminal(self, terminal: TerminalEvent) -> None:
        self._text.clear()
        self._activity.clear()
        await safe_deliver(self.adapter, self.conversation_id, terminal)


async def safe_deliver(
    adapter: ChannelAdapter, conversation_id: ConversationId, event: Delivery
) -> None:
    """Deliver, logging (never raising) what an adapter failed to absorb itself."""
    try:
        await adapter.deliver(conversation_id, event)
    except Exception:
        log.exception("delivery_failed", channel=adapter.channel_id, conversation=conversation_id)


class FlushTicker:
    """The one timer: every ``interval`` seconds, tick every registered lane."""

    def __init__(
        self,
        interval: float,
        on_tick: Callable[[], object] | None = None,
        *,
        on_tick_every: int = 1,
    ) -> None:
        self.interval = interval
        self.on_tick = on_tick
        self.on_tick_every = on_tick_every
        """Call ``on_tick`` (the watchdog) only every so many ticks: at the pump's own
        interval, however fine a channel makes the ticker."""
        self._count = 0
        self._lanes: set[Lane] = set()
        self.tick_costs: list[tuple[int, float]] = []
        """(active lanes, seconds spent) per tick, kept only when ``measure`` is on."""
        self.measure = False

    def register(self, lane: Lane) -> None:
        self._lanes.add(lane)

    def unregister(self, lane: Lane) -> None:
        self._lanes.discard(lane)

    @property
    def active(self) -> int:
        return len(self._lanes)

    def tick(self) -> None:
        """Tick every lane once (what each interval does); the watchdog hook runs on
        every ``on_tick_every``-th tick."""
        started = monotonic()
        for lane in self._lanes:
            lane.tick()
        self._count += 1
        if self.on_tick is not None and self._count % self.on_tick_every == 0:
            self.on_tick()
        if self.measure:
            self.tick_costs.append((len(self._lanes), monotonic() - started))

    async def run(self) -> None:
        next_at = monotonic() + self.interval
        while True:
            await anyio.sleep(max(0.0, next_at - monotonic()))
            self.tick()
            # Keep the cadence fixed; if we fell behind, skip missed ticks, don't burst.
            next_at += self.interval * max(1, math.ceil((monotonic() - next_at) / self.interval))
