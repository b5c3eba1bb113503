"""Fixtures for the runtime contract: every test runs against both session stores."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.runtime.api_body import refusals
from thalos_bot.domain.agents import AgentCatalog, AgentDefinition
from thalos_bot.domain.ids import AgentId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.providers.scripted import ScriptedProvider
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.storage.database import Database
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.storage.protocol import SessionStore
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.tools.types import ToolCall, ToolCatalog, ToolContext, ToolResult, ToolSpec

ALICE = SecurityContext.of("alice", ["user"])
MALLORY = SecurityContext.of("mallory")


def make_catalog() -> AgentCatalog:
    return AgentCatalog(
        [
            AgentDefinition(AgentId("helper"), "Helper", "Helps.", "You help."),
            AgentDefinition(AgentId("coder"), "Coder", "Codes.", "You code.", model="m-coder"),
        ]
    )


class RecordingTools:
    """A tool catalog for runtime tests: tools are plain async functions."""

    def __init__(self, tools: Mapping[str, Callable[[Mapping[str, Any]], Any]]) -> None:
        self.tools = dict(tools)
        self.calls: list[ToolCall] = []
        self.started = anyio.Event()

    def specs_for(self, agent: AgentDefinition) -> Sequence[ToolSpec]:
        return [ToolSpec(name, f"the {name} tool") for name in self.tools]

    async def call(self, call: ToolCall, context: ToolContext) -> ToolResult:
        self.calls.append(call)
        self.started.set()
        result = await self.tools[call.name](call.arguments)
        return result if isinstance(result, ToolResult) else ToolResult(str(result))


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    if request.param == "memory":
        yield MemorySessionStore()
        return
    db = await Database.open(tmp_path / "thalos.db")
    try:
        yield SqliteSessionStore(db)
    finally:
        await db.aclose()


RuntimeFactory = Callable[..., Runtime]


@pytest.fixture
def make_runtime(store: SessionStore) -> Iterator[RuntimeFactory]:
    """Runtimes over the scripted provider; every request it saw is then held to the real
    API's rules (as the Anthropic provider would send it), and the test fails on any."""
    providers: list[ScriptedProvider] = []

    def factory(
        provider: ScriptedProvider,
        tools: ToolCatalog | None = None,
        **settings: Any,
    ) -> Runtime:
        providers.append(provider)
        return Runtime(
            catalog=make_catalog(),
            store=store,
            provider=provider,
            settings=RuntimeSettings(model="m-default", **settings),
            tools=tools,
        )

    yield factory
    problems = [p for provider in providers for p in refusals(provider.requests)]
    assert not problems, "the real API would refuse: " + "; ".join(problems)
