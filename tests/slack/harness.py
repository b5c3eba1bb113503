"""The Slack channel under test: the real plugin, slack-bolt and slack-sdk, pump and
runtime, against the Slack fake over loopback sockets."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from tests.fakes.slack_api import SlackFake
from tests.telegram.harness import CATALOG, CountingAdapter
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.config.models import PumpSettings, Settings
from thalos_bot.providers.scripted import ScriptedProvider
from thalos_bot.pump.pump import ChannelPump
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.service.finals import FinalsThroughOutbox, HandsOver
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.chat_marks import SqliteChatMarks
from thalos_bot.storage.database import Database
from thalos_bot.storage.memory_conversations import MemoryConversationMap
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot_slack.config import SlackConfig
from thalos_bot_slack.manifest import manifest as plugin

USER = "U0ALLOWED"
STRANGER = "U0STRANGER"
CHANNEL = "C0LISTED"
UNLISTED = "C0UNLISTED"
FLUSH = 0.05
SCALE = 60.0
"""The fake counts Slack's minutes this much faster; the channel's pacer follows."""


def tokens() -> tuple[str, str]:
    """(bot token, app token), made at run time: never a real one."""
    return "xoxb-test-" + secrets.token_hex(8), "xapp-test-" + secrets.token_hex(8)


def make_config(fake: SlackFake, **overrides: Any) -> SlackConfig:
    values: dict[str, Any] = {
        "enabled": True,
        "allowed_users": [USER],
        "channels": [CHANNEL],
        "base_url": fake.base_url,
        "ping_interval": 0.3,
        "min_edit_interval": 0.05,
        "request_timeout": 3,
        "drain_timeout": 5,
    }
    values.update(overrides)
    return SlackConfig.model_validate(values)


@dataclass
class Bot:
    fake: SlackFake
    pump: ChannelPump
    runtime: Runtime
    provider: ScriptedProvider
    pair: ChannelPair
    adapter: CountingAdapter
    config: SlackConfig

    def say(self, text: str, **kwargs: Any) -> str:
        return self.fake.say(kwargs.pop("user", USER), text, **kwargs)

    async def answer(
        self, count: int = 1, *, channel: str | None = None, thread_ts: str | None = None
    ) -> list[str]:
        where = channel or self.fake.dm(USER)

        def enough() -> list[str] | None:
            texts = self.fake.texts(where, thread_ts=thread_ts)
            finished = all(not m.streaming for m in self.fake.messages(where))
            return texts if len(texts) >= count and finished else None

        return await self.fake.wait_for(enough)

    async def shows(
        self, expected: list[str], *, channel: str | None = None, thread_ts: str | None = None
    ) -> None:
        """Wait until the bot's messages there read exactly ``expected``."""
        where = channel or self.fake.dm(USER)
        await self.fake.wait_for(lambda: self.fake.texts(where, thread_ts=thread_ts) == expected)


@asynccontextmanager
async def running_bot(
    fake: SlackFake,
    provider: ScriptedProvider | None = None,
    *,
    tmp_path: Path,
    tools: SourceCatalog | None = None,
    outbox: HandsOver | None = None,
    settings: Settings | None = None,
    **overrides: Any,
) -> AsyncIterator[Bot]:
    """``settings``: the host's (e.g. its ``[transcription]``); the defaults otherwise."""
    provider = provider or ScriptedProvider()
    config = make_config(fake, **overrides)
    async with (
        await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db,
        Runtime(
            catalog=CATALOG,
            store=MemorySessionStore(),
            provider=provider,
            settings=RuntimeSettings(model="m"),
            tools=tools,
        ) as runtime,
        plugin.open(config, _host(settings, tmp_path, db)) as pair,
    ):
        adapter = CountingAdapter(pair.adapter)
        given = adapter if outbox is None else FinalsThroughOutbox(adapter, outbox)
        channel_pump = ChannelPump(
            runtime=runtime,
            catalog=CATALOG,
            conversations=MemoryConversationMap(),
            adapters={adapter.channel_id: given},
            settings=PumpSettings(flush_interval=FLUSH),
            awaiting_approval=None if tools is None else tools.gate.waiting_for,
            keep_finals=outbox is not None,
        )
        async with anyio.create_task_group() as group:
            group.start_soon(channel_pump.run, [pair.source])
            try:
                yield Bot(fake, channel_pump, runtime, provider, pair, adapter, config)
            finally:
                channel_pump.stop()


def _host(settings: Settings | None, state: Path, db: Database) -> ChannelHost:
    """The host a daemon gives its channels, with the marks kept in the state folder's
    database (they outlive a restart, as the daemon's do)."""
    return ChannelHost.of(settings or Settings(), CATALOG, state, marks=SqliteChatMarks(db))
