"""Streaming cadence per channel: the terminal's short interval next to Telegram's.

    python bench/console_cadence.py [--deltas 100] [--pace 0.02] [--flush 1.0]
                                    [--console-flush 0.05]

One pump, one ticker, two channels answering at once: a terminal-like adapter asking
for ``--console-flush`` and a Telegram-like one on the pump's ``--flush``. The model (a
local paced provider) streams ``--deltas`` deltas, one every ``--pace`` seconds. Printed
per channel: how long after the first delta left the model its first text showed, the
longest gap between two visible updates while deltas flowed, and the update count.
Console targets: first text within 100 ms, no gap over 150 ms.
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import AsyncGenerator, AsyncIterator
from datetime import UTC, datetime

import anyio

from thalos_bot.channels.ports import Delivery, InboundMessage, Sender, TextUpdate
from thalos_bot.config.models import PumpSettings
from thalos_bot.domain.agents import AgentCatalog, AgentDefinition
from thalos_bot.domain.events import TokenUsage, TurnCompleted, TurnFailed
from thalos_bot.domain.ids import AgentId, ChannelId, ConversationId
from thalos_bot.domain.messages import Message, TextBlock
from thalos_bot.domain.security import SecurityContext
from thalos_bot.providers.base import (
    ModelDone,
    ModelEvent,
    ModelRequest,
    ModelTextDelta,
    ModelUsage,
)
from thalos_bot.pump.pump import ChannelPump
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.storage.memory_conversations import MemoryConversationMap
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.telemetry.logging import configure_logging

CATALOG = AgentCatalog([AgentDefinition(AgentId("a"), "A", "", "")])
SENDER = Sender(SecurityContext.of("bench"))


class PacedModel:
    name = "paced"

    def __init__(self, deltas: int, pace: float) -> None:
        self.deltas = deltas
        self.pace = pace
        self.first_sent: dict[str, float] = {}
        self.last_sent: dict[str, float] = {}

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        who = request.messages[-1].text
        text = ""
        next_at = time.monotonic()
        for index in range(self.deltas):
            next_at += self.pace
            await anyio.sleep(max(0.0, next_at - time.monotonic()))
            self.first_sent.setdefault(who, time.monotonic())
            self.last_sent[who] = time.monotonic()
            text += f"{index} "
            yield ModelTextDelta(f"{index} ")
        yield ModelUsage(TokenUsage(1, self.deltas))
        yield ModelDone(Message("assistant", (TextBlock(text),)), "end_turn")

    async def aclose(self) -> None:
        return None


class Timing:
    def __init__(self, channel: str, flush_interval: float | None) -> None:
        self.channel_id = ChannelId(channel)
        self.flush_interval = flush_interval
        self.updates: list[float] = []
        self.done = anyio.Event()

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        if isinstance(event, TextUpdate) and event.text:
            self.updates.append(time.monotonic())
        elif isinstance(event, TurnCompleted | TurnFailed):
            self.done.set()


class Source:
    def __init__(self, channel: ChannelId) -> None:
        self.channel_id = channel

    async def messages(self) -> AsyncIterator[InboundMessage]:
        yield InboundMessage(
            self.channel_id, ConversationId("c"), SENDER, str(self.channel_id), datetime.now(UTC)
        )


async def main(args: argparse.Namespace) -> None:
    configure_logging("warning")
    model = PacedModel(args.deltas, args.pace)
    console = Timing("console", args.console_flush)
    telegram = Timing("telegram", None)
    runtime = Runtime(
        catalog=CATALOG, store=MemorySessionStore(), provider=model, settings=RuntimeSettings("m")
    )
    async with runtime:
        pump = ChannelPump(
            runtime=runtime,
            catalog=CATALOG,
            conversations=MemoryConversationMap(),
            adapters={console.channel_id: console, telegram.channel_id: telegram},
            settings=PumpSettings(flush_interval=args.flush),
        )
        async with anyio.create_task_group() as group:
            group.start_soon(pump.run, [Source(console.channel_id), Source(telegram.channel_id)])
            await console.done.wait()
            await telegram.done.wait()
    print(
        f"ticker {pump.ticker.interval * 1000:.0f} ms; {args.deltas} deltas every "
        f"{args.pace * 1000:.0f} ms ({args.deltas * args.pace:.1f} s of streaming)"
    )
    for adapter in (console, telegram):
        name = str(adapter.channel_id)
        first = (adapter.updates[0] - model.first_sent[name]) * 1000 if adapter.updates else 0
        flowing = [t for t in adapter.updates if t <= model.last_sent[name]]
        gaps = [b - a for a, b in itertools.pairwise(flowing)]
        interval = adapter.flush_interval or args.flush
        print(
            f"{name:>8} ({interval * 1000:4.0f} ms): first text {first:6.1f} ms after the "
            f"first delta | longest gap while streaming {max(gaps, default=0) * 1000:6.1f} ms"
            f" | {len(adapter.updates)} updates"
        )
    print("console targets: first text ≤ 100 ms, longest gap ≤ 150 ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=100)
    parser.add_argument("--pace", type=float, default=0.02)
    parser.add_argument("--flush", type=float, default=1.0)
    parser.add_argument("--console-flush", type=float, default=0.05)
    anyio.run(main, parser.parse_args())
