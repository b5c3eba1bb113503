"""The Matrix channel under test: the real plugin, pump and runtime, in this process,
against the real Synapse (the bot account's token in the environment, as in production)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.matrix.accounts import Account
from tests.matrix.synapse import SynapseServer
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.config.models import PumpSettings, Settings
from thalos_bot.domain.agents import AgentCatalog, AgentDefinition
from thalos_bot.domain.ids import AgentId
from thalos_bot.providers.scripted import ScriptedProvider
from thalos_bot.pump.pump import ChannelPump
from thalos_bot.pump.speaking import Speaking
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.storage.memory_conversations import MemoryConversationMap
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot_matrix import TOKEN_ENV
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.manifest import manifest as plugin

FLUSH = 0.05
CATALOG = AgentCatalog(
    [AgentDefinition(AgentId("helper"), "Helper", "Helps with anything.", "You help.")]
)


def make_config(
    server: SynapseServer, bot: Account, allowed: list[str], **overrides: Any
) -> MatrixConfig:
    values: dict[str, Any] = {
        "enabled": True,
        "homeserver": server.base_url,
        "user_id": bot.user_id,
        "allowed_users": allowed,
        "sync_timeout": 5,
        "request_timeout": 10,
        "room_min_interval": 0.05,
        "backoff_initial": 0.05,
        "backoff_max": 0.5,
        "drain_timeout": 10,
    }
    values.update(overrides)
    return MatrixConfig.model_validate(values)


@dataclass
class Bot:
    pair: ChannelPair
    pump: ChannelPump
    runtime: Runtime
    provider: ScriptedProvider
    config: MatrixConfig


@asynccontextmanager
async def running_bot(
    server: SynapseServer,
    bot: Account,
    allowed: list[str],
    monkeypatch: pytest.MonkeyPatch,
    state_dir: Path,
    provider: ScriptedProvider | None = None,
    *,
    tools: SourceCatalog | None = None,
    settings: Settings | None = None,
    speaking: Speaking | None = None,
    **overrides: Any,
) -> AsyncIterator[Bot]:
    monkeypatch.setenv(TOKEN_ENV, bot.access_token)
    provider = provider or ScriptedProvider()
    config = make_config(server, bot, allowed, **overrides)
    host = ChannelHost.of(settings or Settings(), CATALOG, state_dir)
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
        channel_pump = ChannelPump(
            runtime=runtime,
            catalog=CATALOG,
            conversations=MemoryConversationMap(),
            adapters={pair.adapter.channel_id: pair.adapter},
            settings=PumpSettings(flush_interval=FLUSH),
            awaiting_approval=None if tools is None else tools.gate.waiting_for,
            speaking=speaking,
        )
        async with anyio.create_task_group() as group:
            group.start_soon(channel_pump.run, [pair.source])
            await pair.receiving.wait()
            try:
                yield Bot(pair, channel_pump, runtime, provider, config)
            finally:
                channel_pump.stop()
