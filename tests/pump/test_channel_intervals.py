"""Per-channel flush intervals: one ticker at the finest interval any channel asks for;
each conversation gets text on its own channel's multiple of it."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from thalos_bot.channels.ports import Delivery, TextUpdate
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.pump.flush import Lane, adapter_interval, finest_interval

pytestmark = pytest.mark.anyio


@dataclass
class Recording:
    channel_id: ChannelId
    flush_interval: float | None = None
    texts: list[str] = field(default_factory=list)

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        if isinstance(event, TextUpdate):
            self.texts.append(event.text)


@dataclass
class Plain:
    """An adapter that asks for nothing (Telegram): the pump's interval."""

    channel_id: ChannelId

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        return None


def test_the_ticker_runs_at_the_finest_interval_asked_for() -> None:
    console = Recording(ChannelId("console"), flush_interval=0.05)
    telegram = Plain(ChannelId("telegram"))
    assert adapter_interval(telegram, 1.0) == 1.0
    assert adapter_interval(console, 1.0) == 0.05
    assert finest_interval(1.0, [console, telegram]) == 0.05
    assert finest_interval(1.0, [telegram]) == 1.0


async def test_a_lane_delivers_on_its_channels_multiple() -> None:
    console = Recording(ChannelId("console"), flush_interval=0.05)
    slow = Recording(ChannelId("telegram"))
    fast_lane = Lane(console, ConversationId("c"), every=1)
    slow_lane = Lane(slow, ConversationId("t"), every=20)
    for tick in range(40):
        for lane in (fast_lane, slow_lane):
            lane.add_text(f"{tick};")
            lane.tick()
            if lane._due:  # what the lane's own task would deliver now
                lane._due = False
                await lane._deliver_update()
    assert len(console.texts) == 40, "the terminal sees every tick"
    # The first update goes out at once (leading edge); then one per 20 ticks (its 1 s).
    assert slow.texts[0] == "0;"
    assert len(slow.texts) == 3, "Telegram keeps one update per 20 ticks (its 1 s)"
    assert "".join(slow.texts) == "".join(console.texts), "no text is lost, only grouped"
