"""The daemon's stores as the dashboard reads them (:class:`DashboardSources`), handed to
the channels in ``ChannelHost.dashboard`` so the web channel can serve the dashboard."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from thalos_bot.channels.registry import ChannelPair
from thalos_bot.config.models import Settings
from thalos_bot.dashboard.deps import DashboardSources, MemoryView
from thalos_bot.memory.assembly import MemoryParts
from thalos_bot.schedules.store import ScheduleStore
from thalos_bot.skills.store import SkillStore
from thalos_bot.storage.audit import SqliteAudit
from thalos_bot.storage.database import Database
from thalos_bot.storage.progress import MEMORY_REINDEX, TaskProgress, read_progress
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.storage.usage import SqliteUsageLedger
from thalos_bot.tools.source import ToolSource


def dashboard_sources(
    settings: Settings,
    database: Database,
    *,
    channels: Callable[[], Sequence[ChannelPair]],
    schedules: ScheduleStore,
    on_schedule_change: Callable[[], None],
    tool_sources: Callable[[], Sequence[ToolSource]],
    skills: SkillStore,
    memory: MemoryParts,
) -> DashboardSources:
    """Every section over the daemon's one database. ``channels`` and ``tool_sources``
    are read at each request (the channels open after this is made)."""

    async def reindex_progress() -> list[TaskProgress]:
        return await read_progress(database, MEMORY_REINDEX)

    return DashboardSources(
        channels=channels,
        sessions=SqliteSessionStore(database),
        ledger=SqliteUsageLedger(database),
        prices=settings.limits.price_table(),
        timezone=settings.limits.timezone,
        schedules=schedules,
        on_schedule_change=on_schedule_change,
        audit=SqliteAudit(database),
        tool_sources=tool_sources,
        skills=skills,
        memory=MemoryView(
            memory.store, settings.memory.embeddings.mode, memory.reindexer, reindex_progress
        ),
    )
