"""What the memory tools and auto-recall need of a store, on any engine
(:class:`~thalos_bot.memory.store.MemoryStore` on SQLite,
:class:`~thalos_bot.storage.pg.memory_store.PgMemoryStore` on PostgreSQL)."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from typing import Protocol

from thalos_bot.memory.fusion import Ranking
from thalos_bot.memory.records import MemoryRecord, NewMemory
from thalos_bot.memory.store import Recalled, Stored


class MemoryPort(Protocol):
    dedupe_threshold: float
    containment_threshold: float

    async def remember(
        self,
        owner: str,
        text: str,
        *,
        kind: str | None = None,
        tags: Iterable[str] = (),
        importance: int | None = None,
        agent: str | None = None,
    ) -> Stored: ...

    async def store(self, memory: NewMemory, *, dedupe: bool = True) -> Stored: ...

    async def recall(
        self,
        owners: Sequence[str],
        query: str,
        *,
        agent: str | None = None,
        top_k: int = 5,
        min_score: float = 0.0,
        char_budget: int | None = None,
        touch: bool = True,
        ranking: Ranking = "hybrid",
    ) -> builtins.list[Recalled]: ...

    async def touch(self, ids: Sequence[str]) -> None: ...

    async def archive(
        self, owner: str, record_id: str, *, seen_by: str | None = None
    ) -> MemoryRecord | None: ...

    async def count(
        self,
        owner: str | None,
        *,
        kind: str | None = None,
        include_archived: bool = False,
        seen_by: str | None = None,
    ) -> int: ...

    async def list(
        self,
        owner: str | None,
        *,
        kind: str | None = None,
        limit: int = 20,
        offset: int = 0,
        include_archived: bool = False,
        seen_by: str | None = None,
    ) -> builtins.list[MemoryRecord]: ...
