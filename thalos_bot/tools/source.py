"""The :class:`ToolSource` seam: a named set of tools the catalog can offer and call.

MCP servers are sources; so are the built-in memory and skills tools. A source knows
nothing of qualified names, agents or policies: the catalog adds those.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.tools.types import ToolContext, ToolResult

SourceState = Literal["starting", "ready", "unavailable", "failed", "disabled", "stopped"]


@dataclass(frozen=True, slots=True)
class SourceTool:
    """One tool under the source's own (unqualified) name."""

    name: str
    description: str
    input_schema: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


@dataclass(frozen=True, slots=True)
class SourceStatus:
    """Where a source stands, for ``/status`` and ``thalos-bot tools``.

    ``reason`` says why a source is ``failed`` (never started) or ``unavailable``
    (started once, down now); ``stderr`` is the end of what a server subprocess wrote
    before it went (for the operator: shown by :meth:`describe`, never to the model).
    Neither carries a secret.
    """

    state: SourceState
    tool_count: int = 0
    reason: str = ""
    stderr: str = ""

    def describe(self) -> str:
        if self.state == "ready":
            return f"ready: {self.tool_count} tool{'' if self.tool_count == 1 else 's'}"
        text = f"{self.state}: {self.reason}" if self.reason else self.state
        return f"{text} (stderr: {self.stderr})" if self.stderr else text


class ToolSource(Protocol):
    @property
    def name(self) -> str:
        """The prefix of this source's qualified tool names (``{name}__{tool}``)."""
        ...

    def tools(self) -> Sequence[SourceTool]:
        """The tools on offer now, in a stable order."""
        ...

    def status(self) -> SourceStatus: ...

    async def call(
        self, tool: str, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolResult:
        """Run ``tool`` (an unqualified name). Failures come back as error results."""
        ...


@runtime_checkable
class OffersToAgents(Protocol):
    """Optional for a source: hide all its tools from some agents (on top of their globs)."""

    def offers_to(self, agent: AgentDefinition) -> bool: ...


class BoundedResults(Protocol):
    """Optional for a source whose results are bounded by construction and must arrive
    whole (a skill body, bounded by the 1 MiB skill file cap and wrapped in ``<skill>``
    tags). The catalog then truncates its results at ``result_budget`` instead of the
    host-wide budget, when that is larger. Read with ``getattr(source, "result_budget", 0)``."""

    result_budget: int
