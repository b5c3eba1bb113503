"""The daemon's stores as the dashboard reads them (:class:`DashboardSources`), handed to
the channels in ``ChannelHost.dashboard`` so the web channel can serve the dashboard."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from thalos_bot.channels.registry import ChannelPair
from thalos_bot.cluster.connections import owners
from thalos_bot.config.models import Settings
from thalos_bot.dashboard.channels import ConnectionRow
from thalos_bot.dashboard.deps import DashboardSources, MemoryView, ScheduleBoard
from thalos_bot.memory.assembly import MemoryParts
from thalos_bot.runtime.limits import SpendingLimits
from thalos_bot.service.budget_board import LimitsBoard
from thalos_bot.service.stores import Stores
from thalos_bot.skills.store import SkillStore
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.pg.usage import PgUsageLedger
from thalos_bot.storage.progress import MEMORY_REINDEX, TaskProgress, read_progress
from thalos_bot.storage.usage import SqliteUsageLedger
from thalos_bot.tools.source import ToolSource


def dashboard_sources(
    settings: Settings,
    stores: Stores,
    *,
    channels: Callable[[], Sequence[ChannelPair]],
    schedules: ScheduleBoard,
    on_schedule_change: Callable[[], None],
    tool_sources: Callable[[], Sequence[ToolSource]],
    skills: SkillStore,
    memory: MemoryParts,
    limits: SpendingLimits | None = None,
) -> DashboardSources:
    """Every section over the daemon's stores (SQLite, or the shared PostgreSQL; the
    reindex's progress row is the replica's own). ``channels`` and ``tool_sources`` are
    read at each request (the channels open after this is made)."""

    async def reindex_progress() -> list[TaskProgress]:
        return await read_progress(stores.local, MEMORY_REINDEX)

    connections = None
    if isinstance(stores.shared, PgDatabase):
        shared = stores.shared

        async def connections() -> list[ConnectionRow]:
            return [
                ConnectionRow(
                    o.channel_id, None if o.expired else o.holder, o.since, o.taken_over_at
                )
                for o in await owners(shared)
            ]

    return DashboardSources(
        channels=channels,
        connections=connections,
        sessions=stores.listing,
        ledger=stores.spend,
        prices=settings.price_table(),
        timezone=settings.limits.timezone,
        schedules=schedules,
        on_schedule_change=on_schedule_change,
        audit=stores.audit_search,
        tool_sources=tool_sources,
        skills=skills,
        memory=MemoryView(
            memory.store, settings.memory.embeddings.mode, memory.reindexer, reindex_progress
        ),
        budgets=(
            LimitsBoard(limits, stores.usage)
            if limits is not None and isinstance(stores.usage, SqliteUsageLedger | PgUsageLedger)
            else None
        ),
    )
