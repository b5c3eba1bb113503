"""Two named providers as ``bot.toml`` declares them, for the tests that run a daemon's
routes over both fakes: ``claude`` on the Anthropic fake and ``local`` on the
OpenAI-compatible fake, an agent ``cloud`` on Claude falling back to the local model
and (optionally) an agent ``home`` on the local model alone.

:func:`provider_fakes` (a fixture, registered in ``tests/conftest.py``) runs both fakes;
:func:`pair_runtime` builds the runtime from the settings as the daemon builds it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic_api import AnthropicFake
from tests.fakes.openai_api import OpenAIFake
from tests.runtime.conftest import RecordingTools
from thalos_bot.config.models import Settings, build_catalog
from thalos_bot.media.store import MemoryMediaStore
from thalos_bot.providers.factory import build_routes
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.service.spending import spending_limits
from thalos_bot.storage.database import Database
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.storage.usage import SqliteUsageLedger


@pytest.fixture
def provider_fakes() -> Iterator[tuple[AnthropicFake, OpenAIFake]]:
    """The Anthropic fake and the OpenAI-compatible fake, both running."""
    with AnthropicFake() as anthropic, OpenAIFake() as local:
        yield anthropic, local


def providers_toml(
    anthropic: AnthropicFake,
    local: OpenAIFake,
    *,
    claude_model: str | None = None,
    local_extra: str = "",
    home: bool = True,
) -> str:
    """The ``[[providers]]`` and ``[[agents]]`` tables (no SDK retries). ``local_extra``
    are more keys of the ``local`` provider; ``home`` adds the agent on it alone."""
    model = f'model = "{claude_model}"\n' if claude_model else ""
    text = f"""
[[providers]]
id = "claude"
kind = "anthropic"
{model}base_url = "{anthropic.base_url}"
max_retries = 0

[[providers]]
id = "local"
kind = "openai"
model = "{local.model.name}"
base_url = "{local.base_url}"
max_retries = 0
{local_extra}

[[agents]]
id = "cloud"
name = "Cloud"
provider = "claude"
fallback = ["local"]
"""
    if home:
        text += """
[[agents]]
id = "home"
name = "Home"
provider = "local"
"""
    return text


@asynccontextmanager
async def pair_runtime(
    tmp_path: Path, settings: Settings, *, limits: bool = False, **runtime: Any
) -> AsyncIterator[tuple[Runtime, RecordingTools, Database]]:
    """A runtime on the routes ``settings`` build (agent ``cloud`` first), a SQLite store
    in ``tmp_path`` and a tool ``t__echo``; with ``limits``, the daemon's spending limits
    (and all its migrations). ``runtime`` are more :class:`RuntimeSettings` fields."""

    async def echo(args: Any) -> str:
        return f"echo {args.get('n')}"

    tools = RecordingTools({"t__echo": echo})
    routes = build_routes(settings)
    db = await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS if limits else None)
    try:
        async with Runtime(
            catalog=build_catalog(settings),
            store=SqliteSessionStore(db),
            provider=routes.by_agent["cloud"].provider,
            settings=RuntimeSettings(model="unused", **runtime),
            tools=tools,
            media=MemoryMediaStore(),
            routes=routes.by_agent,
            limits=spending_limits(settings, SqliteUsageLedger(db)) if limits else None,
        ) as rt:
            yield rt, tools, db
    finally:
        await routes.aclose()
        await db.aclose()
