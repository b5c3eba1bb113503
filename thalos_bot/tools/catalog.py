"""The tool catalog the runtime talks to: sources behind qualified names, agent globs and
role policies.

An agent sees only the tools its ``tools`` globs match (and that the source offers it, for
a source with ``offers_to``); any other name, real or not, gets the same "no such tool"
result. Policies are checked in :meth:`SourceCatalog.call` before
the source hears of the call, from ``context.caller`` only; then the permission gate
(:mod:`thalos_bot.tools.gate`) applies the policy's action (allow, deny, ask).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import structlog

from thalos_bot.config.tools import ToolPolicySettings, ToolsSettings
from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.domain.ids import SessionId
from thalos_bot.guard.guard import ResultGuard
from thalos_bot.tools.gate import AuditSink, PermissionGate, SessionApprovals
from thalos_bot.tools.guard import guard_result
from thalos_bot.tools.names import assign_names
from thalos_bot.tools.policy import PolicySet, matches_any
from thalos_bot.tools.source import OffersToAgents, SourceTool, ToolSource
from thalos_bot.tools.types import ToolCall, ToolContext, ToolResult, ToolSpec

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One tool as the catalog knows it."""

    qualified: str
    """The name the model sees."""
    natural: str
    """``{source}__{tool}`` as the source spells it; globs and policies match either."""
    source: ToolSource
    tool: SourceTool
    required_roles: frozenset[str]

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.qualified, self.tool.description, self.tool.input_schema)

    def visible_to(self, agent: AgentDefinition) -> bool:
        if isinstance(self.source, OffersToAgents) and not self.source.offers_to(agent):
            return False
        return matches_any(agent.tools, self.qualified, self.natural)


def truncate(text: str, budget: int) -> str:
    """``text`` cut to ``budget`` characters, with a marker saying how much was cut."""
    if len(text) <= budget:
        return text
    cut = len(text) - budget
    return f"{text[:budget]}\n[truncated: {cut} of {len(text)} characters cut]"


@dataclass(slots=True)
class _Slots:
    gate: anyio.Semaphore
    users: int = 0


class SourceCatalog:
    """A :class:`~thalos_bot.tools.types.ToolCatalog` over :class:`ToolSource` objects."""

    def __init__(
        self,
        sources: Sequence[ToolSource],
        policies: PolicySet | None = None,
        *,
        max_result_chars: int = 20_000,
        max_parallel_calls: int = 4,
        guard: ResultGuard | None = None,
        gate: PermissionGate | None = None,
    ) -> None:
        names = [s.name for s in sources]
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"two tool sources are named {name!r}")
        self._sources = tuple(sources)
        self._policies = policies or PolicySet()
        self.gate = gate or PermissionGate(self._policies)
        self._budget = max_result_chars
        self._parallel = max_parallel_calls
        self._slots: dict[SessionId, _Slots] = {}
        self._key: tuple[tuple[str, tuple[SourceTool, ...]], ...] | None = None
        self._entries: tuple[CatalogEntry, ...] = ()
        self._by_name: dict[str, CatalogEntry] = {}
        self._reported: set[tuple[str, str]] = set()
        self._guard = guard

    @classmethod
    def from_settings(
        cls,
        sources: Sequence[ToolSource],
        policies: Sequence[ToolPolicySettings],
        tools: ToolsSettings,
        *,
        guard: ResultGuard | None = None,
        audit: AuditSink | None = None,
        approvals: SessionApprovals | None = None,
    ) -> SourceCatalog:
        policy_set = PolicySet.from_settings(policies)
        return cls(
            sources,
            policy_set,
            max_result_chars=tools.max_result_chars,
            max_parallel_calls=tools.max_parallel_calls,
            guard=guard,
            gate=PermissionGate(
                policy_set, timeout=tools.approval_timeout, audit=audit, approvals=approvals
            ),
        )

    @property
    def policies(self) -> PolicySet:
        return self._policies

    @property
    def sources(self) -> tuple[ToolSource, ...]:
        return self._sources

    def entries(self) -> tuple[CatalogEntry, ...]:
        """Every tool on offer, for any agent, in source then listing order."""
        self._refresh()
        return self._entries

    def entries_for(self, agent: AgentDefinition) -> list[CatalogEntry]:
        return [e for e in self.entries() if e.visible_to(agent)]

    def specs_for(self, agent: AgentDefinition) -> Sequence[ToolSpec]:
        return [e.spec for e in self.entries_for(agent)]

    async def call(self, call: ToolCall, context: ToolContext) -> ToolResult:
        self._refresh()
        entry = self._by_name.get(call.name)
        if entry is None or not entry.visible_to(context.agent):
            return ToolResult(f"There is no tool named {call.name!r}.", "error")
        missing = self._policies.missing_roles(context.caller, entry.qualified, entry.natural)
        if missing:
            log.warning(
                "tool-refused",
                tool=entry.qualified,
                caller=context.caller.id,
                missing_roles=sorted(missing),
                session_id=context.session_id,
            )
            roles = ", ".join(sorted(entry.required_roles))
            return ToolResult(
                f"The tool {entry.qualified!r} is not permitted for this caller "
                f"(it needs the role{'s' if len(entry.required_roles) > 1 else ''}: {roles}).",
                "refused",
            )
        if refusal := await self.gate.check(entry.qualified, entry.natural, call, context):
            return refusal
        async with self._slot(context.session_id):
            try:
                result = await entry.source.call(entry.tool.name, call.arguments, context)
            except Exception:
                log.exception("tool-source-error", tool=entry.qualified)
                result = ToolResult(f"The tool {entry.qualified!r} failed unexpectedly.", "error")
        budget = max(self._budget, getattr(entry.source, "result_budget", 0))
        result = dataclasses.replace(result, content=truncate(result.content, budget))
        return guard_result(self._guard, entry.qualified, result, context)

    @asynccontextmanager
    async def _slot(self, session_id: SessionId) -> AsyncIterator[None]:
        slots = self._slots.get(session_id)
        if slots is None:
            slots = self._slots[session_id] = _Slots(anyio.Semaphore(self._parallel))
        slots.users += 1
        try:
            async with slots.gate:
                yield
        finally:
            slots.users -= 1
            if slots.users == 0:
                del self._slots[session_id]

    def _refresh(self) -> None:
        key = tuple((s.name, tuple(s.tools())) for s in self._sources)
        if key == self._key:
            return
        by_source = {s.name: s for s in self._sources}
        tools = {(name, t.name): t for name, listed in key for t in listed}
        entries: list[CatalogEntry] = []
        for assigned in assign_names(tools):
            if assigned.note is not None and (assigned.natural, assigned.qualified) not in (
                self._reported
            ):
                self._reported.add((assigned.natural, assigned.qualified))
                log.info(
                    "tool-renamed",
                    tool=assigned.natural,
                    exposed_as=assigned.qualified,
                    why=assigned.note,
                )
            entries.append(
                CatalogEntry(
                    qualified=assigned.qualified,
                    natural=assigned.natural,
                    source=by_source[assigned.source],
                    tool=tools[(assigned.source, assigned.tool)],
                    required_roles=self._policies.required_roles(
                        assigned.qualified, assigned.natural
                    ),
                )
            )
        self._key = key
        self._entries = tuple(entries)
        self._by_name = {e.qualified: e for e in entries}
