"""A runtime over the scripted provider and an in-memory store, for runner tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from thalos_bot.domain.agents import AgentCatalog, AgentDefinition
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.providers.scripted import ScriptedProvider
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.storage.protocol import SessionRecord
from thalos_bot.subagents.runner import SubagentRunner

ALICE = SecurityContext.of("alice", ["user"])

CATALOG = AgentCatalog(
    [
        AgentDefinition(
            AgentId("boss"), "Boss", "Hands work out.", "You lead.", delegates=("research*",)
        ),
        AgentDefinition(AgentId("researcher"), "Researcher", "Finds things.", "You research."),
        AgentDefinition(AgentId("secret"), "Secret", "Not for delegation.", "You keep secrets."),
    ]
)


class CountingStore(MemorySessionStore):
    """The in-memory store, remembering which sessions were created."""

    def __init__(self) -> None:
        super().__init__()
        self.created: list[SessionId] = []

    async def create(self, record: SessionRecord) -> None:
        await super().create(record)
        self.created.append(record.id)

    async def records(self) -> list[SessionRecord]:
        found = [await self.get(sid) for sid in self.created]
        return [r for r in found if r is not None]


@dataclass
class World:
    runtime: Runtime
    store: CountingStore
    provider: ScriptedProvider
    runner: SubagentRunner


@pytest.fixture
async def world() -> AsyncIterator[World]:
    provider = ScriptedProvider(default=None)
    store = CountingStore()
    async with Runtime(
        catalog=CATALOG, store=store, provider=provider, settings=RuntimeSettings(model="m")
    ) as runtime:
        yield World(runtime, store, provider, SubagentRunner(runtime))
