"""Everything memory adds to a host, built from ``[memory]`` over the shared database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio

from thalos_bot.config.memory import MemorySettings
from thalos_bot.memory.embedders import build_embedder
from thalos_bot.memory.embedding.base import Embedder
from thalos_bot.memory.port import MemoryPort
from thalos_bot.memory.recall import MemoryRecall
from thalos_bot.memory.reindex import Reindexer, ReindexLoop
from thalos_bot.memory.store import MemoryStore
from thalos_bot.memory.tools import MemoryToolSource
from thalos_bot.memory.vectors import VectorIndex
from thalos_bot.storage.database import Database


@dataclass(frozen=True, slots=True)
class MemoryParts:
    store: MemoryPort
    source: MemoryToolSource
    """Add to the tool sources of the :class:`~thalos_bot.tools.catalog.SourceCatalog`."""
    contributor: MemoryRecall
    """Add to the runtime's ``contributors``."""
    embedder: Embedder
    reindexer: ReindexLoop

    @asynccontextmanager
    async def maintained(self) -> AsyncIterator[None]:
        """While open, index-pending records are embedded in the background; on exit
        the embedder is closed."""
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self.reindexer.run)
                try:
                    yield
                finally:
                    tasks.cancel_scope.cancel()
        finally:
            await self.embedder.aclose()


def build_memory(
    database: Database,
    settings: MemorySettings | None = None,
    *,
    embedder: Embedder | None = None,
) -> MemoryParts:
    """The store, the ``memory`` tool source and the auto-recall contributor over the
    SQLite ``database`` (opened with the memory migrations). ``embedder`` defaults to
    the one ``[memory.embeddings]`` asks for. PostgreSQL's are built by
    :func:`thalos_bot.storage.pg.memory_assembly.build_pg_memory`."""
    settings = settings or MemorySettings()
    embedder = embedder or build_embedder(settings.embeddings)
    vectors = VectorIndex(embedder, min_similarity=settings.embeddings.min_similarity)
    reindexer = Reindexer(database, vectors)
    store = MemoryStore(
        database,
        dedupe_threshold=settings.dedupe_threshold,
        containment_threshold=settings.containment_threshold,
        vectors=vectors if embedder.available else None,
        dedupe_similarity=settings.embeddings.dedupe_similarity,
        on_pending=reindexer.wake,
    )
    return assemble(store, reindexer, embedder, settings)


def assemble(
    store: MemoryPort, reindexer: ReindexLoop, embedder: Embedder, settings: MemorySettings
) -> MemoryParts:
    """The parts around ``store``, whatever its engine."""
    return MemoryParts(
        store=store,
        source=MemoryToolSource(store, settings),
        contributor=MemoryRecall(store, shared_owner=settings.shared_owner),
        embedder=embedder,
        reindexer=reindexer,
    )
