"""Memory's parts over a PostgreSQL store (the SQLite ones are
:func:`thalos_bot.memory.assembly.build_memory`)."""

from __future__ import annotations

from thalos_bot.config.memory import MemorySettings
from thalos_bot.memory.assembly import MemoryParts, assemble
from thalos_bot.memory.embedders import build_embedder
from thalos_bot.memory.embedding.base import Embedder
from thalos_bot.storage.database import Database
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.pg.memory_reindex import PgReindexer
from thalos_bot.storage.pg.memory_store import PgMemoryStore
from thalos_bot.storage.pg.memory_vectors import PgVectorIndex


def build_pg_memory(
    database: PgDatabase,
    local: Database,
    settings: MemorySettings | None = None,
    *,
    embedder: Embedder | None = None,
) -> MemoryParts:
    """The store on ``database``; ``local`` (the replica's own SQLite file) keeps the
    progress row of its reindex."""
    settings = settings or MemorySettings()
    embedder = embedder or build_embedder(settings.embeddings)
    vectors = PgVectorIndex(embedder, min_similarity=settings.embeddings.min_similarity)
    reindexer = PgReindexer(database, vectors, local)
    store = PgMemoryStore(
        database,
        dedupe_threshold=settings.dedupe_threshold,
        containment_threshold=settings.containment_threshold,
        vectors=vectors if embedder.available else None,
        dedupe_similarity=settings.embeddings.dedupe_similarity,
        on_pending=reindexer.wake,
    )
    return assemble(store, reindexer, embedder, settings)
