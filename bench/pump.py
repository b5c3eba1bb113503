"""The pump under load: 1, 100 and 1,000 concurrent conversations streaming at once.

    python bench/pump.py [--conversations 1 100 1000] [--deltas 80] [--pace 0.025]
                         [--flush 1.0] [--store sqlite|memory|postgresql]

Each conversation sends one message; the model (a local paced provider, no network)
answers with ``--deltas`` small deltas, one every ``--pace`` seconds. A recording adapter
notes when each delta reaches it. Printed per run:

* deliveries per answer (text flushes + the final event) against deltas per answer, and
  the target ⌈stream duration / flush interval⌉ + 1;
* added latency from a delta leaving the model to its delivery, p50 and p99 (the flush
  interval is the designed upper bound; target p99 ≤ interval + 50 ms);
* process CPU time per delta (pump, runtime, store and this fake model together);
* resident memory per conversation (RSS growth at the peak, divided by conversations);
* the cost of one tick of the ticker against the number of active conversations.
"""

from __future__ import annotations

import argparse
import math
import resource
import statistics
import tempfile
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

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
from thalos_bot.storage.conversations import ConversationMap
from thalos_bot.storage.database import Database
from thalos_bot.storage.memory_conversations import MemoryConversationMap
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.storage.pg.conversations import PgConversationMap
from thalos_bot.storage.pg.database import DEFAULT_POOL_SIZE, PgDatabase
from thalos_bot.storage.pg.sessions import PgSessionStore
from thalos_bot.storage.protocol import SessionStore
from thalos_bot.storage.sqlite_conversations import SqliteConversationMap
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.telemetry.logging import configure_logging

CHANNEL = ChannelId("bench")
SENDER = Sender(SecurityContext.of("bench"))
CATALOG = AgentCatalog([AgentDefinition(AgentId("a"), "A", "", "")])


class PacedModel:
    """Streams ``deltas`` tokens ``conversation:index;`` and records when each left."""

    name = "paced"

    def __init__(self, deltas: int, pace: float) -> None:
        self.deltas = deltas
        self.pace = pace
        self.sent: dict[str, float] = {}

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        conversation = request.messages[-1].text
        text = ""
        next_at = time.monotonic()
        for index in range(self.deltas):
            next_at += self.pace
            await anyio.sleep(max(0.0, next_at - time.monotonic()))
            token = f"{conversation}:{index};"
            self.sent[token] = time.monotonic()
            text += token
            yield ModelTextDelta(token)
        yield ModelUsage(TokenUsage(1, self.deltas))
        yield ModelDone(Message("assistant", (TextBlock(text),)), "end_turn")

    async def aclose(self) -> None:
        return None


class LatencyAdapter:
    channel_id = CHANNEL

    def __init__(self, model: PacedModel) -> None:
        self.model = model
        self.latencies: list[float] = []
        self.deliveries: dict[str, int] = {}
        self.shown: dict[str, str] = {}
        self.finished = 0
        self.all_done = anyio.Event()
        self.expected = 0
        self.peak_rss_kb = 0
        self.ended: dict[str, float] = {}

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        now = time.monotonic()
        if isinstance(event, TextUpdate):
            fresh = event.text
            self.shown[conversation_id] = self.shown.get(conversation_id, "") + fresh
        elif isinstance(event, TurnCompleted | TurnFailed):
            full = event.text if isinstance(event, TurnCompleted) else event.partial_text
            fresh = full[len(self.shown.get(conversation_id, "")) :]
        else:
            return
        self.deliveries[conversation_id] = self.deliveries.get(conversation_id, 0) + 1
        for token in fresh.split(";"):
            if token:
                self.latencies.append(now - self.model.sent[token + ";"])
        if isinstance(event, TurnCompleted | TurnFailed):
            self.ended[conversation_id] = now
            self.peak_rss_kb = max(self.peak_rss_kb, rss_kb())
            self.finished += 1
            if self.finished == self.expected:
                self.all_done.set()


class OneShotSource:
    channel_id = CHANNEL

    def __init__(self, conversations: int) -> None:
        self.conversations = conversations

    async def messages(self) -> AsyncIterator[InboundMessage]:
        for index in range(self.conversations):
            name = f"c{index}"
            yield InboundMessage(CHANNEL, ConversationId(name), SENDER, name, datetime.now(UTC))


def rss_kb() -> int:
    with Path("/proc/self/status").open() as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


@asynccontextmanager
async def stores(kind: str) -> AsyncIterator[tuple[SessionStore, ConversationMap]]:
    if kind == "memory":
        yield MemorySessionStore(), MemoryConversationMap()
        return
    if kind == "postgresql":
        async with postgres_stores() as made:
            yield made
        return
    with tempfile.TemporaryDirectory() as folder:
        db = await Database.open(Path(folder) / "bench.db")
        try:
            yield SqliteSessionStore(db), SqliteConversationMap(db)
        finally:
            await db.aclose()


@asynccontextmanager
async def postgres_stores() -> AsyncIterator[tuple[SessionStore, ConversationMap]]:
    """A throwaway PostgreSQL 15 (durability off, as the tests run it) and the daemon's
    default pool of 10 connections: what one replica has."""
    from tests.storage.postgres import start_server

    server = start_server()
    try:
        db = await PgDatabase.open(server.create_database("bench"), pool_size=DEFAULT_POOL_SIZE)
        try:
            yield PgSessionStore(db), PgConversationMap(db)
        finally:
            await db.aclose()
    finally:
        server.stop()


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


async def run_once(conversations: int, args: argparse.Namespace) -> None:
    model = PacedModel(args.deltas, args.pace)
    adapter = LatencyAdapter(model)
    adapter.expected = conversations
    settings = PumpSettings(flush_interval=args.flush)
    baseline_rss = rss_kb()
    async with stores(args.store) as (store, conversation_map):
        runtime = Runtime(
            catalog=CATALOG, store=store, provider=model, settings=RuntimeSettings("m")
        )
        async with runtime:
            pump = ChannelPump(
                runtime=runtime,
                catalog=CATALOG,
                conversations=conversation_map,
                adapters={CHANNEL: adapter},
                settings=settings,
            )
            pump.ticker.measure = True
            cpu_started = time.process_time()
            wall_started = time.monotonic()
            async with anyio.create_task_group() as group:
                group.start_soon(pump.run, [OneShotSource(conversations)])
                await adapter.all_done.wait()
            cpu = time.process_time() - cpu_started
            wall = time.monotonic() - wall_started
    deliveries = list(adapter.deliveries.values())
    # The target per answer uses that answer's measured stream duration (first delta to
    # its final event): under load the model's pace and the history commit stretch it.
    over_target = 0
    for name, count in adapter.deliveries.items():
        duration = adapter.ended[name] - model.sent[f"{name}:0;"]
        if count > math.ceil(duration / args.flush) + 1:
            over_target += 1
    target_deliveries = math.ceil(args.deltas * args.pace / args.flush) + 1
    busy_ticks = [cost for active, cost in pump.ticker.tick_costs if active]
    actives = [active for active, _ in pump.ticker.tick_costs if active]
    total_deltas = conversations * args.deltas
    print(
        f"{conversations:>6} conv | deliveries/answer max {max(deliveries):>3} "
        f"mean {statistics.mean(deliveries):5.1f} (deltas {args.deltas}; nominal target "
        f"≤ {target_deliveries}; over their own target: {over_target})"
        f" | latency p50 {percentile(adapter.latencies, 0.5) * 1000:6.1f} ms"
        f" p99 {percentile(adapter.latencies, 0.99) * 1000:6.1f} ms"
        f" | CPU/delta {cpu / total_deltas * 1e6:6.1f} µs"
        f" | RSS/conv {(adapter.peak_rss_kb - baseline_rss) / conversations:6.1f} KiB"
        f" | tick {statistics.mean(busy_ticks) * 1e6 if busy_ticks else 0:7.1f} µs"
        f" @ {max(actives) if actives else 0} active | wall {wall:4.1f}s"
    )


async def main(args: argparse.Namespace) -> None:
    configure_logging("warning")
    print(
        f"flush interval {args.flush}s; each answer {args.deltas} deltas every {args.pace}s "
        f"({args.deltas * args.pace:.1f}s of streaming); store: {args.store}"
    )
    for conversations in args.conversations:
        await run_once(conversations, args)
    print(f"target p99 latency ≤ {args.flush * 1000 + 50:.0f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, nargs="+", default=[1, 100, 1000])
    parser.add_argument("--deltas", type=int, default=80)
    parser.add_argument("--pace", type=float, default=0.025)
    parser.add_argument("--flush", type=float, default=1.0)
    parser.add_argument("--store", choices=["sqlite", "memory", "postgresql"], default="sqlite")
    anyio.run(main, parser.parse_args())
