"""The Discord channel under test: the real plugin, discord.py, pump and runtime, against
the Discord fake over loopback sockets."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from tests.fakes.discord_api import DiscordFake
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.config.models import PumpSettings, Settings
from thalos_bot.domain.agents import AgentCatalog, AgentDefinition
from thalos_bot.domain.ids import AgentId
from thalos_bot.providers.scripted import ScriptedProvider
from thalos_bot.pump.pump import ChannelPump
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.chat_marks import SqliteChatMarks
from thalos_bot.storage.database import Database
from thalos_bot.storage.memory_conversations import MemoryConversationMap
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot_discord.config import DiscordConfig
from thalos_bot_discord.manifest import manifest as plugin

FLUSH = 0.05
CATALOG = AgentCatalog(
    [
        AgentDefinition(AgentId("helper"), "Helper", "Helps with anything.", "You help."),
        AgentDefinition(AgentId("coder"), "Coder", "Writes code.", "You code."),
    ]
)


@dataclass
class World:
    """The people and places of a test: an owner, a stranger, a server with a listed and
    an unlisted channel."""

    owner: int
    stranger: int
    guild: int
    listed: int
    unlisted: int
    state: Path
    """The channel's state folder (kept across a restart)."""

    @classmethod
    def of(cls, fake: DiscordFake, state: Path) -> World:
        guild = fake.add_guild("home")
        return cls(
            fake.add_user("owner"),
            fake.add_user("stranger"),
            guild,
            fake.add_channel(guild, "bot"),
            fake.add_channel(guild, "random"),
            state,
        )


def make_config(fake: DiscordFake, world: World, **overrides: Any) -> DiscordConfig:
    values: dict[str, Any] = {
        "enabled": True,
        "allowed_users": [world.owner],
        "guild_channels": [world.listed],
        "base_url": fake.base_url,
        "gateway_url": fake.gateway_url,
        "guild_ready_timeout": 0.05,
        "backoff_initial": 0.05,
        "backoff_max": 0.2,
        "drain_timeout": 5,
    }
    values.update(overrides)
    return DiscordConfig.model_validate(values)


@dataclass
class Bot:
    fake: DiscordFake
    world: World
    pump: ChannelPump
    runtime: Runtime
    provider: ScriptedProvider
    pair: ChannelPair
    config: DiscordConfig

    def dm(self) -> int:
        return self.fake.dm_channel_id(self.world.owner)

    async def texts(self, channel: int, count: int, timeout: float = 10) -> list[str]:
        """Wait until the channel shows ``count`` bot messages; return their texts."""

        def enough() -> list[str] | None:
            texts = self.fake.texts(channel)
            return texts if len(texts) >= count else None

        return await self.fake.wait_for(enough, timeout)


@asynccontextmanager
async def running_bot(
    fake: DiscordFake,
    world: World,
    provider: ScriptedProvider | None = None,
    *,
    tools: SourceCatalog | None = None,
    pump: dict[str, Any] | None = None,
    settings: Settings | None = None,
    **overrides: Any,
) -> AsyncIterator[Bot]:
    """``settings``: the host's (e.g. its ``[transcription]``); the defaults otherwise."""
    provider = provider or ScriptedProvider()
    config = make_config(fake, world, **overrides)
    async with (
        await Database.open(world.state / "thalos.db", migrations=ALL_MIGRATIONS) as db,
        Runtime(
            catalog=CATALOG,
            store=MemorySessionStore(),
            provider=provider,
            settings=RuntimeSettings(model="m"),
            tools=tools,
        ) as runtime,
        plugin.open(config, _host(settings, world.state, db)) as pair,
    ):
        channel_pump = ChannelPump(
            runtime=runtime,
            catalog=CATALOG,
            conversations=MemoryConversationMap(),
            adapters={pair.adapter.channel_id: pair.adapter},
            settings=PumpSettings(**{"flush_interval": FLUSH, **(pump or {})}),
            awaiting_approval=None if tools is None else tools.gate.waiting_for,
        )
        with anyio.fail_after(10):
            await pair.receiving.wait()
        async with anyio.create_task_group() as group:
            group.start_soon(channel_pump.run, [pair.source])
            try:
                yield Bot(fake, world, channel_pump, runtime, provider, pair, config)
            finally:
                channel_pump.stop()


def _host(settings: Settings | None, state: Path, db: Database) -> ChannelHost:
    """The host a daemon gives its channels, with the marks kept in the state folder's
    database (they outlive a restart, as the daemon's do)."""
    return ChannelHost.of(settings or Settings(), CATALOG, state, marks=SqliteChatMarks(db))
