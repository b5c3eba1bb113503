"""The memory section's read model: how many memories (and archived), the embeddings
mode, how many still wait for a vector, and the reindex's progress row when there is
one (the same ``task_progress`` row ``thalos-bot status`` shows)."""

from __future__ import annotations

from dataclasses import dataclass

from thalos_bot.dashboard.deps import MemoryView
from thalos_bot.storage.progress import TaskProgress


@dataclass(frozen=True, slots=True)
class MemorySummary:
    count: int
    archived: int
    mode: str
    pending: int | None
    """Memories not yet embedded; None when the daemon has no reindexer."""
    reindex: TaskProgress | None


async def memory_summary(view: MemoryView) -> MemorySummary:
    current = await view.store.count(None)
    everything = await view.store.count(None, include_archived=True)
    pending = None if view.pending is None else await view.pending.pending_count()
    progress = [] if view.progress is None else await view.progress()
    return MemorySummary(
        count=current,
        archived=max(0, everything - current),
        mode=view.mode,
        pending=pending,
        reindex=progress[0] if progress else None,
    )
