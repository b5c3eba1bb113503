"""The daemon under contract: a transport's real plug-in, the pump and the runtime (with a
scripted model and tools behind a permission gate), in this process."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from tests.channels.contract.transport import ContractTransport
from tests.tools.test_gate import FsSource, ListAudit
from thalos_bot.channels.ports import ChannelAdapter
from thalos_bot.channels.registry import ChannelHost
from thalos_bot.config.models import PumpSettings, Settings
from thalos_bot.config.speech import SpeechSettings
from thalos_bot.domain.agents import AgentCatalog, AgentDefinition
from thalos_bot.domain.events import ToolImage
from thalos_bot.domain.ids import AgentId, ChannelId
from thalos_bot.providers.scripted import ScriptedProvider
from thalos_bot.pump.pump import ChannelPump
from thalos_bot.pump.speaking import Speaking
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.service.clip_files import ClipFiles
from thalos_bot.service.finals import FinalsThroughOutbox
from thalos_bot.service.outbox import Outbox
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.speech.local import LocalSpeaker
from thalos_bot.storage.chat_marks import SqliteChatMarks
from thalos_bot.storage.database import Database
from thalos_bot.storage.memory_conversations import MemoryConversationMap
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.storage.outbox import SqliteOutbox
from thalos_bot.storage.voice_modes import SqliteVoiceModes
from thalos_bot.storage.web_events import SqlitePageEvents
from thalos_bot.storage.web_logins import SqliteLogins
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot.tools.gate import PermissionGate
from thalos_bot.tools.policy import PolicySet, ToolPolicy
from thalos_bot.tools.source import SourceStatus, SourceTool
from thalos_bot.tools.types import ToolContext, ToolResult

CATALOG = AgentCatalog(
    [AgentDefinition(AgentId("helper"), "Helper", "Helps with anything.", "You help.")]
)
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


class DrawSource:
    """One tool, ``draw__chart``, whose result carries a PNG (an attachment out)."""

    name = "draw"

    def tools(self) -> Sequence[SourceTool]:
        return (SourceTool("chart", "Draws a chart."),)

    def status(self) -> SourceStatus:
        return SourceStatus("ready", 1)

    async def call(
        self, tool: str, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolResult:
        image = ToolImage(context.session_id, "draw__chart", "image/png", PNG)
        return ToolResult(f"[image: image/png, {len(PNG)} bytes, not shown]", images=(image,))


@dataclass
class Stores:
    """What outlives a restart (with the state folder and the server)."""

    sessions: MemorySessionStore = field(default_factory=MemorySessionStore)
    conversations: MemoryConversationMap = field(default_factory=MemoryConversationMap)


@dataclass
class Daemon:
    transport: ContractTransport
    provider: ScriptedProvider
    files: FsSource
    stores: Stores


@asynccontextmanager
async def running(
    transport: ContractTransport,
    state_dir: Path,
    provider: ScriptedProvider | None = None,
    stores: Stores | None = None,
    settings: Settings | None = None,
    *,
    speaking: bool = False,
) -> AsyncIterator[Daemon]:
    """Start the daemon with ``transport``'s plug-in on ``state_dir``; stop it on exit.
    ``settings``: the host's (e.g. its ``[transcription]``); ``speaking``: answers to a
    voice note are read aloud by the local engine (espeak-ng and ffmpeg, for real), and
    their clips go through the outbox in the state folder (a ``voice`` row each, handed
    to the channel's ``deliver_clip`` where it has one), as in the daemon."""
    provider = provider or ScriptedProvider()
    stores = stores or Stores()
    files = FsSource()
    policies = PolicySet([ToolPolicy("fs__write_*", action="ask")])
    gate = PermissionGate(policies, timeout=60.0, audit=ListAudit())
    tools = SourceCatalog([files, DrawSource()], policies, gate=gate)
    async with (
        await Database.open(state_dir / "thalos.db", migrations=ALL_MIGRATIONS) as db,
        Runtime(
            catalog=CATALOG,
            store=stores.sessions,
            provider=provider,
            settings=RuntimeSettings(model="m"),
            tools=tools,
        ) as runtime,
        transport.plugin.open(transport.config(), _host(settings, state_dir, db)) as pair,
        AsyncExitStack() as stack,
    ):
        adapter: ChannelAdapter = pair.adapter
        if speaking:
            channels = {ChannelId(adapter.channel_id): adapter}
            kept = Outbox(
                SqliteOutbox(db), channels, keep=3600, clips=ClipFiles.in_state(state_dir)
            )
            adapter = FinalsThroughOutbox(adapter, await stack.enter_async_context(kept.running()))
        pump = ChannelPump(
            runtime=runtime,
            catalog=CATALOG,
            conversations=stores.conversations,
            adapters={pair.adapter.channel_id: adapter},
            # A turn still running at the stop is cut after 1 s (the daemon waits 10 s).
            settings=PumpSettings(flush_interval=0.05, shutdown_grace=1.0),
            awaiting_approval=gate.waiting_for,
            speaking=_speaking(db) if speaking else None,
            keep_finals=speaking,
        )
        async with anyio.create_task_group() as group:
            group.start_soon(pump.run, [pair.source])
            try:
                await transport.started()
                yield Daemon(transport, provider, files, stores)
            finally:
                pump.stop()


def _host(settings: Settings | None, state: Path, db: Database) -> ChannelHost:
    """The host a daemon gives its channels, with the marks kept in the state folder's
    database (they outlive a restart, as the daemon's do)."""
    return ChannelHost.of(
        settings or Settings(),
        CATALOG,
        state,
        marks=SqliteChatMarks(db),
        logins=SqliteLogins(db),
        page_events=SqlitePageEvents(db),
    )


def _speaking(db: Database) -> Speaking:
    """The local engine, each conversation's ``/voice`` in the state folder's database."""
    settings = SpeechSettings(enabled=True)
    return Speaking(LocalSpeaker(settings.local), settings, SqliteVoiceModes(db))
