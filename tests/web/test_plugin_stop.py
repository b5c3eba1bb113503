"""The web channel's stop: the page's delivery engine lived in the channel's task group,
so a stopped channel's adapter no longer names it (a final then is appended as it comes,
not queued to senders that are gone); the history written by the channel's writer is
on disk for the next start."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from thalos_bot.channels.registry import ChannelHost
from thalos_bot.config.models import Settings
from thalos_bot.domain.agents import AgentCatalog, AgentDefinition
from thalos_bot.domain.ids import AgentId, ConversationId
from thalos_bot_web.adapter import WebAdapter
from thalos_bot_web.config import WebConfig
from thalos_bot_web.history import History
from thalos_bot_web.plugin import plugin

pytestmark = pytest.mark.anyio
OWNER = ConversationId("owner")
CATALOG = AgentCatalog([AgentDefinition(AgentId("helper"), "Helper", "Helps.", "You help.")])


async def test_a_stopped_channel_drops_its_engine_and_keeps_its_history(tmp_path: Path) -> None:
    host = ChannelHost.of(Settings(), CATALOG, tmp_path)
    config = WebConfig(enabled=True, listen="127.0.0.1:0", principals=["owner"])
    with anyio.fail_after(30):
        async with plugin.open(config, host) as pair:
            adapter = pair.adapter
            assert isinstance(adapter, WebAdapter)
            during = adapter.engine
            adapter.said(OWNER, "hello", [])
    assert during is not None, "the engine runs while the channel does"
    assert adapter.engine is None, "its task group is closed"
    assert [k.kind for k in History(tmp_path / "web").load(OWNER)] == ["user"]
