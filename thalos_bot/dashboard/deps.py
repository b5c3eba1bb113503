"""What the dashboard needs from its host: the stores it reads, and the host's login and
CSRF protection. Every store is optional: a section whose store is absent says so.

The protocols below are the few read methods the dashboard calls; the daemon's SQLite
and PostgreSQL stores implement them (``recent``, ``days``, ``search``, ``listing``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Protocol

from starlette.requests import Request

from thalos_bot.channels.registry import ChannelPair
from thalos_bot.dashboard.channels import ConnectionRow
from thalos_bot.domain.clock import utc_now
from thalos_bot.domain.pricing import ModelUsages, PriceTable
from thalos_bot.domain.schedule import Schedule
from thalos_bot.skills.store import StoredSkill
from thalos_bot.storage.audit import AuditQuery, FoundDecision
from thalos_bot.storage.progress import TaskProgress
from thalos_bot.storage.protocol import SessionRecord
from thalos_bot.storage.usage import DayUsage
from thalos_bot.tools.gate import AuditEntry
from thalos_bot.tools.source import ToolSource


class SessionListing(Protocol):
    async def recent(self, limit: int = 50) -> list[SessionRecord]: ...


class SpendLedger(Protocol):
    async def session_models(self, session: str) -> ModelUsages: ...

    async def days(
        self, first: str, last: str, principal: str | None = None
    ) -> dict[str, DayUsage]: ...


class AuditSearch(Protocol):
    async def search(self, query: AuditQuery) -> list[FoundDecision]: ...

    async def since(self, at: datetime | None = None, *, limit: int = 1000) -> list[AuditEntry]:
        """Decisions from ``at`` on (all when None), oldest first (``thalos-bot audit``)."""
        ...


class ScheduleBoard(Protocol):
    """The schedule store's listing and the owner's three actions."""

    async def listing(self) -> list[Schedule]: ...

    async def pause(self, schedule_id: str) -> bool: ...

    async def resume(self, schedule_id: str, now: datetime) -> bool: ...

    async def cancel(self, schedule_id: str, *, owner: str | None = None) -> bool: ...


class SkillListing(Protocol):
    async def stored(self) -> list[StoredSkill]: ...


class MemoryCounts(Protocol):
    async def count(self, owner: str | None, *, include_archived: bool = False) -> int: ...


class PendingIndex(Protocol):
    async def pending_count(self) -> int: ...


@dataclass(frozen=True, slots=True)
class PersonToday:
    """A person's spending today against their daily limits (None: no limit)."""

    person: str
    tokens: int
    cost_usd: float
    daily_tokens: int | None
    daily_cost_usd: float | None
    lifted: bool
    """An admin lifted their limits for the rest of today."""


class BudgetBoard(Protocol):
    """Each person's day, and the owner's lift of a person's limits for the day."""

    async def today(self) -> list[PersonToday]: ...

    async def lift(self, person: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class MemoryView:
    store: MemoryCounts
    mode: str
    """``[memory.embeddings] mode``: embedded, local, endpoint or off."""
    pending: PendingIndex | None = None
    """The reindexer, whose pending rows are memories still waiting for a vector."""
    progress: Callable[[], Awaitable[list[TaskProgress]]] | None = None
    """The memory reindex's ``task_progress`` row (``read_progress(db, MEMORY_REINDEX)``)."""


@dataclass(frozen=True, slots=True)
class DashboardSources:
    """What the dashboard reads: the daemon's stores and registries. The daemon fills it
    (``ChannelHost.dashboard``); a web host adds its login and CSRF hooks with
    :meth:`DashboardDeps.over`."""

    channels: Callable[[], Sequence[ChannelPair]] = tuple
    connections: Callable[[], Awaitable[Sequence[ConnectionRow]]] | None = None
    """Replicas: who owns each platform connection (None: one process)."""
    sessions: SessionListing | None = None
    ledger: SpendLedger | None = None
    prices: PriceTable = field(default_factory=lambda: PriceTable({}))
    timezone: str = "UTC"
    """The limits' time zone: what a day is in the ledger."""
    schedules: ScheduleBoard | None = None
    on_schedule_change: Callable[[], None] = lambda: None
    """Called after a pause, resume or cancel (the daemon wakes its scheduler)."""
    audit: AuditSearch | None = None
    tool_sources: Callable[[], Sequence[ToolSource]] = tuple
    skills: SkillListing | None = None
    memory: MemoryView | None = None
    budgets: BudgetBoard | None = None
    clock: Callable[[], datetime] = utc_now


@dataclass(frozen=True, slots=True)
class DashboardDeps:
    """Everything the dashboard reads, and the host's security hooks.

    ``principal_of(request)``: the logged-in principal id, or None (the dashboard then
    answers 401; the host normally refuses before that). ``is_owner(principal)``: may
    this principal change things (pause, resume, cancel)? ``csrf_token(request)``: the
    token to put in every form, in the field ``csrf_field``. ``check_csrf(request)``:
    awaited before any change; False refuses it (403). The host may read the form (it
    is cached by Starlette) or a header. The other fields are :class:`DashboardSources`'.
    """

    principal_of: Callable[[Request], str | None]
    is_owner: Callable[[str], bool]
    csrf_token: Callable[[Request], str]
    check_csrf: Callable[[Request], Awaitable[bool]]
    csrf_field: str = "csrf_token"
    person_of: Callable[[str], str] = str
    """Whose sessions, spend and schedules a logged-in principal who is not an owner
    sees: their person's (``[[people]]``); an owner sees everyone's."""
    channels: Callable[[], Sequence[ChannelPair]] = tuple
    connections: Callable[[], Awaitable[Sequence[ConnectionRow]]] | None = None
    sessions: SessionListing | None = None
    ledger: SpendLedger | None = None
    prices: PriceTable = field(default_factory=lambda: PriceTable({}))
    timezone: str = "UTC"
    schedules: ScheduleBoard | None = None
    on_schedule_change: Callable[[], None] = lambda: None
    audit: AuditSearch | None = None
    tool_sources: Callable[[], Sequence[ToolSource]] = tuple
    skills: SkillListing | None = None
    memory: MemoryView | None = None
    budgets: BudgetBoard | None = None
    clock: Callable[[], datetime] = utc_now

    @classmethod
    def over(
        cls,
        sources: DashboardSources | None,
        *,
        principal_of: Callable[[Request], str | None],
        is_owner: Callable[[str], bool],
        csrf_token: Callable[[Request], str],
        check_csrf: Callable[[Request], Awaitable[bool]],
        csrf_field: str = "csrf_token",
        person_of: Callable[[str], str] = str,
    ) -> DashboardDeps:
        """The host's hooks over the daemon's ``sources`` (None: every section says
        its store is not available)."""
        held = sources or DashboardSources()
        return cls(
            principal_of,
            is_owner,
            csrf_token,
            check_csrf,
            csrf_field,
            person_of,
            **{f.name: getattr(held, f.name) for f in fields(DashboardSources)},
        )

    def scope(self, request: Request) -> str | None:
        """Whose data the page shows: None for an owner (everyone's), else the person
        of the logged-in principal."""
        principal = self.principal_of(request)
        if principal is not None and self.is_owner(principal):
            return None
        return self.person_of(principal or "")
