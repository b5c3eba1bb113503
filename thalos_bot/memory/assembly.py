"""Everything memory adds to a host, built from ``[memory]`` over the shared database."""

from __future__ import annotations

from dataclasses import dataclass

from thalos_bot.config.memory import MemorySettings
from thalos_bot.memory.recall import MemoryRecall
from thalos_bot.memory.store import MemoryStore
from thalos_bot.memory.tools import MemoryToolSource
from thalos_bot.storage.database import Database


@dataclass(frozen=True, slots=True)
class MemoryParts:
    store: MemoryStore
    source: MemoryToolSource
    """Add to the tool sources of the :class:`~thalos_bot.tools.catalog.SourceCatalog`."""
    contributor: MemoryRecall
    """Add to the runtime's ``contributors``."""


def build_memory(database: Database, settings: MemorySettings | None = None) -> MemoryParts:
    """The store, the ``memory`` tool source and the auto-recall contributor. The
    database must have been opened with the memory migrations."""
    settings = settings or MemorySettings()
    store = MemoryStore(
        database,
        dedupe_threshold=settings.dedupe_threshold,
        containment_threshold=settings.containment_threshold,
    )
    return MemoryParts(
        store=store,
        source=MemoryToolSource(store, settings),
        contributor=MemoryRecall(store, shared_owner=settings.shared_owner),
    )
