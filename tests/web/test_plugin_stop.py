"""The web channel's stop: the page's delivery engine lived in the channel's task group,
so a stopped channel's adapter no longer names it (a final then is appended as it comes,
not queued to senders that are gone); what the page was given is in the daemon's
database for the next start."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest

from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.registry import ChannelHost
from thalos_bot.config.models import Settings
from thalos_bot.domain.agents import AgentCatalog, AgentDefinition
from thalos_bot.domain.ids import AgentId, ConversationId
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.web_events import SqlitePageEvents
from thalos_bot.storage.web_logins import SqliteLogins
from thalos_bot_web.adapter import WebAdapter
from thalos_bot_web.config import WebConfig
from thalos_bot_web.plugin import plugin

pytestmark = pytest.mark.anyio
OWNER = ConversationId("owner")
CATALOG = AgentCatalog([AgentDefinition(AgentId("helper"), "Helper", "Helps.", "You help.")])


@asynccontextmanager
async def hosted(state: Path) -> AsyncIterator[ChannelHost]:
    """A daemon's host for the channel, its logins and page events in the state
    folder's database."""
    async with await Database.open(state / "thalos.db", migrations=ALL_MIGRATIONS) as db:
        yield ChannelHost.of(
            Settings(),
            CATALOG,
            state,
            logins=SqliteLogins(db),
            page_events=SqlitePageEvents(db),
        )


async def test_a_stopped_channel_drops_its_engine_and_keeps_its_history(tmp_path: Path) -> None:
    config = WebConfig(enabled=True, listen="127.0.0.1:0", principals=["owner"])
    with anyio.fail_after(30):
        async with hosted(tmp_path) as host, plugin.open(config, host) as pair:
            adapter = pair.adapter
            assert isinstance(adapter, WebAdapter)
            during = adapter.engine
            adapter.said(OWNER, "hello", [])
    assert during is not None, "the engine runs while the channel does"
    assert adapter.engine is None, "its task group is closed"
    async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:
        kept = await SqlitePageEvents(db).after({OWNER: 0})
    assert [e.kind for e in kept] == ["user"]


async def test_readyz_answers_503_once_the_daemon_stops(tmp_path: Path) -> None:
    """The balancer's probe, outside the login: ready while the channel serves; 503 as
    soon as the pump stops reading, so that the balancer sends nothing more to a
    listener about to close (deploy/haproxy.cfg checks it)."""
    config = WebConfig(enabled=True, listen="127.0.0.1:0", principals=["owner"])
    with anyio.fail_after(30):
        async with hosted(tmp_path) as host, plugin.open(config, host) as pair:
            assert isinstance(pair.source, Inlet)
            url = pair.describe.removeprefix("web: serving ").rstrip("/")
            async with httpx.AsyncClient(base_url=url) as client:
                ready = await client.get("/readyz")
                assert (ready.status_code, ready.text) == (200, "ready\n")
                assert (await client.get("/api/events")).status_code == 401, "the rest: login"
                pair.source.stopped()  # what the pump does as it stops reading
                draining = await client.get("/readyz")
                assert (draining.status_code, draining.text) == (503, "draining\n")
