"""The Telegram channel under test: the real plugin, PTB, pump and runtime, against the
Telegram fake over loopback sockets."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import anyio

from tests.fakes.telegram_api import TelegramFake
from tests.telegram import catalog
from thalos_bot.channels.marks import ChatMarks
from thalos_bot.channels.ports import ChannelAdapter, Delivery, TextUpdate
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.config.models import PumpSettings, Settings
from thalos_bot.domain.ids import ConversationId
from thalos_bot.providers.scripted import ScriptedProvider
from thalos_bot.pump.pump import ChannelPump
from thalos_bot.pump.speaking import Speaking
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.storage.memory_conversations import MemoryConversationMap
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.manifest import manifest as plugin

USER = 4242
"""The allowed user; their private chat has the same id."""
STRANGER = 6666
FLUSH = 0.05
CATALOG = catalog.CATALOG


def fake_token() -> str:
    return "123456:TEST-" + secrets.token_hex(16)


def make_config(fake: TelegramFake, **overrides: Any) -> TelegramConfig:
    values: dict[str, Any] = {
        "enabled": True,
        "allowed_user_ids": [USER],
        "principal_id": "owner",
        "base_url": fake.base_url,
        "streaming": "draft",
        "poll_timeout": 1,
        "request_timeout": 2,
        "chat_min_interval": 0.05,
        "typing_interval": 4.5,
        "backoff_initial": 0.05,
        "backoff_max": 0.2,
        "conflict_backoff": 0.05,
        "drain_timeout": 5,
    }
    values.update(overrides)
    return TelegramConfig.model_validate(values)


@dataclass
class CountingAdapter:
    """Passes deliveries on to the Telegram adapter, counting the pump's flushes."""

    inner: ChannelAdapter
    channel_id: Any = None
    flushes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.channel_id = self.inner.channel_id

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        if isinstance(event, TextUpdate):
            self.flushes.append(event.text)
        await self.inner.deliver(conversation_id, event)


@dataclass
class Bot:
    fake: TelegramFake
    pump: ChannelPump
    runtime: Runtime
    provider: ScriptedProvider
    pair: ChannelPair
    adapter: CountingAdapter
    config: TelegramConfig

    def say(self, text: str, *, chat: int = USER, user: int | None = None) -> int:
        return self.fake.push_text(chat, USER if user is None else user, text)

    async def answer(self, count: int = 1, *, chat: int = USER, timeout: float = 10) -> list[str]:
        """Wait until the chat shows ``count`` bot messages; return their texts."""

        def enough() -> list[str] | None:
            texts = self.fake.texts(chat)
            return texts if len(texts) >= count else None

        found = await self.fake.wait_for(enough, timeout)
        assert found is not None
        return found


@asynccontextmanager
async def running_bot(
    fake: TelegramFake,
    provider: ScriptedProvider | None = None,
    *,
    tmp_path: Path | None = None,
    pump: dict[str, Any] | None = None,
    tools: SourceCatalog | None = None,
    marks: ChatMarks | None = None,
    settings: Settings | None = None,
    speaking: Speaking | None = None,
    **overrides: Any,
) -> AsyncIterator[Bot]:
    """``settings`` reach the channel as its host's (e.g. a ``[transcription]``);
    ``speaking``: answers read aloud."""
    provider = provider or ScriptedProvider()
    config = make_config(fake, **overrides)
    with TemporaryDirectory() as fresh:  # its own state folder, unless given one
        host = ChannelHost.of(settings or Settings(), CATALOG, tmp_path or Path(fresh), marks=marks)
        pump_settings = PumpSettings(**{"flush_interval": FLUSH, **(pump or {})})
        async with (
            Runtime(
                catalog=CATALOG,
                store=MemorySessionStore(),
                provider=provider,
                settings=RuntimeSettings(model="m"),
                tools=tools,
            ) as runtime,
            plugin.open(config, host) as pair,
        ):
            adapter = CountingAdapter(pair.adapter)
            channel_pump = ChannelPump(
                runtime=runtime,
                catalog=CATALOG,
                conversations=MemoryConversationMap(),
                adapters={adapter.channel_id: adapter},
                settings=pump_settings,
                awaiting_approval=None if tools is None else tools.gate.waiting_for,
                speaking=speaking,
            )
            async with anyio.create_task_group() as group:
                group.start_soon(channel_pump.run, [pair.source])
                try:
                    yield Bot(fake, channel_pump, runtime, provider, pair, adapter, config)
                finally:
                    channel_pump.stop()
