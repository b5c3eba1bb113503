"""One host-wide flush cadence for streamed text.

Each conversation with a running turn has a :class:`Lane`: text deltas and tool activity
accumulate in it, and its own delivery task hands the adapter at most one
:class:`TextUpdate` per tick. A single :class:`FlushTicker` drives every lane, so the
number of timers does not grow with the number of conversations. Two things skip the
cadence. The first update of a turn goes out at once (leading edge), so the first words
show as soon as the model sends them rather than up to a tick later; from then on the
cadence applies. Terminal events are delivered as soon as any delivery already under way
returns.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from time import monotonic

import anyio
import structlog

from thalos_bot.channels.ports import ChannelAdapter, Delivery, TextUpdate
from thalos_bot.domain.events import TerminalEvent, ToolCallFinished, ToolCallStarted
from thalos_bot.domain.ids import ConversationId

log = structlog.get_logger(__name__)


class Lane:
    """The outbox of one conversation for the duration of one turn."""

    def __init__(self, adapter: ChannelAdapter, conversation_id: ConversationId) -> None:
        self.adapter = adapter
        self.conversation_id = conversation_id
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
        """Called by the ticker: deliver what is pending, once."""
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

    def __init__(self, interval: float, on_tick: Callable[[], object] | None = None) -> None:
        self.interval = interval
        self.on_tick = on_tick
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
        """Tick every lane once (what each interval does)."""
        started = monotonic()
        for lane in self._lanes:
            lane.tick()
        if self.on_tick is not None:
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
