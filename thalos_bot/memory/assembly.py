"""Everything memory adds to a host, built from ``[memory]`` over the shared database
(SQLite or PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio

from thalos_bot.config.memory import MemorySettings
from thalos_bot.memory.embedding.base import Embedder
from thalos_bot.memory.embedding.factory import build_embedder
from thalos_bot.memory.pg_reindex import PgReindexer
from thalos_bot.memory.pg_store import PgMemoryStore
from thalos_bot.memory.pg_vectors import PgVectorIndex
from thalos_bot.memory.recall import MemoryRecall
from thalos_bot.memory.reindex import Reindexer, ReindexLoop
from thalos_bot.memory.store import MemoryStore
from thalos_bot.memory.tools import MemoryToolSource
from thalos_bot.memory.vectors import VectorIndex
from thalos_bot.storage.database import Database
from thalos_bot.storage.pg.database import PgDatabase


@dataclass(frozen=True, slots=True)
class MemoryParts:
    store: MemoryStore | PgMemoryStore
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
    database: Database | PgDatabase,
    settings: MemorySettings | None = None,
    *,
    embedder: Embedder | None = None,
    local: Database | None = None,
) -> MemoryParts:
    """The store, the ``memory`` tool source and the auto-recall contributor. The
    database must have been opened with the memory migrations. ``embedder`` defaults
    to the one ``[memory.embeddings]`` asks for. On PostgreSQL, ``local`` (the
    replica's own SQLite file) keeps the reindex's progress row."""
    settings = settings or MemorySettings()
    embedder = embedder or build_embedder(settings.embeddings)
    floor = settings.embeddings.min_similarity
    store: MemoryStore | PgMemoryStore
    reindexer: ReindexLoop
    if isinstance(database, PgDatabase):
        if local is None:
            raise ValueError("memory on PostgreSQL needs the replica's local database")
        pg_vectors = PgVectorIndex(embedder, min_similarity=floor)
        reindexer = PgReindexer(database, pg_vectors, local)
        store = PgMemoryStore(
            database,
            dedupe_threshold=settings.dedupe_threshold,
            containment_threshold=settings.containment_threshold,
            vectors=pg_vectors if embedder.available else None,
            dedupe_similarity=settings.embeddings.dedupe_similarity,
            on_pending=reindexer.wake,
        )
    else:
        vectors = VectorIndex(embedder, min_similarity=floor)
        reindexer = Reindexer(database, vectors)
        store = MemoryStore(
            database,
            dedupe_threshold=settings.dedupe_threshold,
            containment_threshold=settings.containment_threshold,
            vectors=vectors if embedder.available else None,
            dedupe_similarity=settings.embeddings.dedupe_similarity,
            on_pending=reindexer.wake,
        )
    return MemoryParts(
        store=store,
        source=MemoryToolSource(store, settings),
        contributor=MemoryRecall(store, shared_owner=settings.shared_owner),
        embedder=embedder,
        reindexer=reindexer,
    )
