"""A fake source, a recording adapter and a controllable clock for pump tests."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from thalos_bot.channels.ports import (
    ChannelAdapter,
    Delivery,
    InboundMessage,
    Notice,
    Sender,
    TextUpdate,
)
from thalos_bot.config.models import PumpSettings
from thalos_bot.domain.agents import AgentCatalog, AgentDefinition
from thalos_bot.domain.events import TurnCompleted, TurnFailed
from thalos_bot.domain.ids import AgentId, ChannelId, ConversationId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.providers.routing import ProviderRoute
from thalos_bot.providers.scripted import ScriptedProvider
from thalos_bot.pump.pump import ChannelPump
from thalos_bot.pump.speaking import Speaking
from thalos_bot.runtime.limits import SpendingLimits
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.storage.memory_conversations import MemoryConversationMap
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.storage.turn_journal import TurnJournal

CHANNEL = ChannelId("fake")
USER = Sender(SecurityContext.of("owner"), "tester")


class ManualClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs: float) -> None:
        self.now += timedelta(**kwargs)


class FakeSource:
    channel_id = CHANNEL

    def __init__(self) -> None:
        self.unread: list[str] = []
        self._send: MemoryObjectSendStream[InboundMessage]
        self._receive: MemoryObjectReceiveStream[InboundMessage]
        self._send, self._receive = anyio.create_memory_object_stream[InboundMessage](math.inf)

    def send(
        self,
        text: str,
        conversation: str = "c1",
        *,
        redelivered: bool = False,
        voice: bool = False,
        ref: str | None = None,
    ) -> anyio.Event:
        handled = anyio.Event()
        message = InboundMessage(
            CHANNEL,
            ConversationId(conversation),
            USER,
            text,
            datetime.now(UTC),
            handled,
            redelivered=redelivered,
            voice=voice,
            message_ref=ref,
        )
        try:
            self._send.send_nowait(message)
        except anyio.BrokenResourceError:
            self.unread.append(text)  # the pump stopped reading
        return handled

    def close(self) -> None:
        self._send.close()

    async def messages(self) -> AsyncIterator[InboundMessage]:
        async with self._receive:
            async for message in self._receive:
                yield message


@dataclass
class Record:
    conversation: str
    delivery: Delivery
    tick: int


@dataclass
class RecordingAdapter:
    channel_id: ChannelId = CHANNEL
    records: list[Record] = field(default_factory=list)
    tick: int = 0
    _changed: anyio.Event = field(default_factory=anyio.Event)

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        self.records.append(Record(conversation_id, event, self.tick))
        self._changed.set()
        self._changed = anyio.Event()

    def on_tick(self) -> None:
        self.tick += 1

    def of(self, conversation: str = "c1") -> list[Delivery]:
        return [r.delivery for r in self.records if r.conversation == conversation]

    def notices(self, conversation: str = "c1") -> list[str]:
        return [d.text for d in self.of(conversation) if isinstance(d, Notice)]

    def terminals(self, conversation: str = "c1") -> list[TurnCompleted | TurnFailed]:
        return [d for d in self.of(conversation) if isinstance(d, TurnCompleted | TurnFailed)]

    def final_texts(self, conversation: str = "c1") -> list[str]:
        """The text of each completed turn (a failed one shows as ``failed:<code>``)."""
        return [
            t.text if isinstance(t, TurnCompleted) else f"failed:{t.error.code.value}"
            for t in self.terminals(conversation)
        ]

    def updates(self, conversation: str = "c1") -> list[Record]:
        return [
            r
            for r in self.records
            if r.conversation == conversation and isinstance(r.delivery, TextUpdate)
        ]

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 3.0) -> None:
        with anyio.fail_after(timeout):
            while not predicate():
                await self._changed.wait()


CATALOG = AgentCatalog(
    [
        AgentDefinition(AgentId("helper"), "Helper", "Helps with anything.", "You help."),
        AgentDefinition(AgentId("coder"), "Coder", "Writes code.", "You code."),
    ]
)


@dataclass
class Harness:
    pump: ChannelPump
    runtime: Runtime
    source: FakeSource
    adapter: RecordingAdapter
    provider: ScriptedProvider
    conversations: MemoryConversationMap
    clock: ManualClock

    async def binding(self, conversation: str = "c1") -> Any:
        return await self.conversations.get(CHANNEL, ConversationId(conversation))


@asynccontextmanager
async def running_pump(
    provider: ScriptedProvider | None = None,
    routes: Mapping[str, ProviderRoute] | None = None,
    *,
    adapter: RecordingAdapter | None = None,
    wrap: Callable[[RecordingAdapter], ChannelAdapter] | None = None,
    speaking: Speaking | None = None,
    budgets: SpendingLimits | None = None,
    journal: TurnJournal | None = None,
    **settings: Any,
) -> AsyncIterator[Harness]:
    """``routes`` give agents their own provider (a fallback chain, say); ``wrap``: the
    pump is given the adapter wrapped as the daemon would (finals kept, through it)."""
    provider = provider or ScriptedProvider()
    clock = ManualClock()
    store = MemorySessionStore()
    conversations = MemoryConversationMap()
    adapter = adapter or RecordingAdapter()
    source = FakeSource()
    settings.setdefault("flush_interval", 0.05)
    pump_settings = PumpSettings(**settings)
    async with Runtime(
        catalog=CATALOG,
        store=store,
        provider=provider,
        settings=RuntimeSettings(model="m"),
        clock=clock,
        routes=routes,
    ) as runtime:
        pump = ChannelPump(
            runtime=runtime,
            catalog=CATALOG,
            conversations=conversations,
            adapters={CHANNEL: adapter if wrap is None else wrap(adapter)},
            settings=pump_settings,
            clock=clock,
            on_tick=adapter.on_tick,
            keep_finals=wrap is not None,
            speaking=speaking,
            budgets=budgets,
            journal=journal,
        )
        harness = Harness(pump, runtime, source, adapter, provider, conversations, clock)
        async with anyio.create_task_group() as group:
            group.start_soon(pump.run, [source])
            try:
                yield harness
            finally:
                source.close()


def texts(records: Iterator[Record] | list[Record]) -> str:
    return "".join(r.delivery.text for r in records if isinstance(r.delivery, TextUpdate))
