"""Fixtures for the memory tests: a database with the memory schema, a store on a
clock the test moves, callers and agents."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from thalos_bot.domain.agents import AgentDefinition, MemoryPolicy
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.memory.embedding.base import EmbedderError, Vectors
from thalos_bot.memory.embedding.wordllama import WordLlamaEmbedder
from thalos_bot.memory.schema import with_memory
from thalos_bot.memory.store import MemoryStore
from thalos_bot.memory.vectors import VectorIndex
from thalos_bot.storage.database import Database
from thalos_bot.tools.types import ToolCall, ToolContext

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ALICE = SecurityContext.of("alice", ["user"])
BOB = SecurityContext.of("bob", ["user"])
NOBODY = SecurityContext.of("")
SID = SessionId("s_memory_test")


@dataclass
class Clock:
    now: datetime = T0
    calls: list[datetime] = field(default_factory=list)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def agent(
    agent_id: str = "assistant",
    *,
    tools: tuple[str, ...] = ("*",),
    memory: MemoryPolicy | None = None,
) -> AgentDefinition:
    return AgentDefinition(
        AgentId(agent_id),
        agent_id.title(),
        "",
        "You help.",
        tools=tools,
        memory=memory or MemoryPolicy(enabled=True),
    )


def context(caller: SecurityContext = ALICE, who: AgentDefinition | None = None) -> ToolContext:
    return ToolContext(caller, who or agent(), SID)


def call(name: str, /, **arguments: Any) -> ToolCall:
    return ToolCall(f"call_{name}", name, arguments)


async def open_db(path: Path | str) -> Database:
    return await Database.open(path, migrations=with_memory())


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    async with await open_db(tmp_path / "thalos.db") as database:
        yield database


@pytest.fixture
def store(db: Database, clock: Clock) -> MemoryStore:
    return MemoryStore(db, clock=clock)


class SwitchableEmbedder:
    """The real WordLlama embedder that a test can make fail (an embedder outage)."""

    available = True

    def __init__(self, model_suffix: str = "") -> None:
        self.inner = WordLlamaEmbedder()
        self.failing = False
        self.calls = 0
        self.suffix = model_suffix

    @property
    def model(self) -> str:
        return self.inner.model + self.suffix

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    async def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        if self.failing:
            raise EmbedderError("embedder outage (test)")
        return await self.inner.embed(texts)

    async def aclose(self) -> None:
        return None


@pytest.fixture
def embedder() -> SwitchableEmbedder:
    return SwitchableEmbedder()


@pytest.fixture
def embedded_store(db: Database, clock: Clock, embedder: SwitchableEmbedder) -> MemoryStore:
    return MemoryStore(db, clock=clock, vectors=VectorIndex(embedder))


class NoNetwork:
    """Every socket connection and name lookup fails, loopback included."""

    def __init__(self) -> None:
        self.attempts: list[Any] = []

    def refuse(self, *args: Any, **kwargs: Any) -> Any:
        self.attempts.append(args)
        raise OSError("network is off in this test")


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> NoNetwork:
    guard = NoNetwork()
    monkeypatch.setattr(socket.socket, "connect", guard.refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", guard.refuse)
    monkeypatch.setattr(socket, "getaddrinfo", guard.refuse)
    monkeypatch.setattr(socket, "create_connection", guard.refuse)
    return guard
