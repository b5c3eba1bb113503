"""What the runtime knows about tools: a spec to show the model, a call, a result.

The runtime talks to one :class:`ToolCatalog`. The catalog decides which tools an agent
sees (its ``tools`` globs) and enforces role policies before a tool runs; a refusal comes
back as a :class:`ToolResult` the model can read, never as an exception.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from thalos_bot.domain.address import Address
from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.domain.events import Info, TokenUsage, ToolImage, ToolOutcome
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.tools.approval import Approver


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it. ``name`` is qualified: ``{source}__{tool}``."""

    name: str
    description: str
    input_schema: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Who is calling. Authorization reads ``caller`` only, never a tool argument."""

    caller: SecurityContext
    agent: AgentDefinition
    session_id: SessionId
    approver: Approver | None = None
    """Who to ask about a call a policy marks ``ask``; None: nobody, so such calls are refused."""
    depth: int = 0
    """How deep the calling turn runs: 0 for a person's turn, 1 for a subagent of it."""
    reply_to: Address | None = None
    """The conversation the calling turn came from (None for a detached run)."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    content: str
    outcome: ToolOutcome = "ok"
    events: tuple[Info, ...] = ()
    """Facts a built-in tool wants on the event stream (e.g. ``memory-stored``); the
    runtime emits them after the call's ``ToolCallFinished``."""
    usage: TokenUsage = TokenUsage()
    """Tokens the tool spent on the model (a delegated subagent); the runtime adds them
    to the turn's usage (the session's count), not to the day's ledger again: the
    subagent's own turn wrote them there."""
    images: tuple[ToolImage, ...] = ()
    """Images for the user (an MCP tool's), emitted after :attr:`events`; the model
    reads only their placeholder in :attr:`content`."""

    @property
    def is_error(self) -> bool:
        return self.outcome != "ok"


class ToolCatalog(Protocol):
    def specs_for(self, agent: AgentDefinition) -> Sequence[ToolSpec]:
        """The tools ``agent`` may see, in a stable order."""
        ...

    async def call(self, call: ToolCall, context: ToolContext) -> ToolResult:
        """Run one call. Never raises for tool failures: they become error results."""
        ...


class EmptyToolCatalog:
    """No tools at all."""

    def specs_for(self, agent: AgentDefinition) -> Sequence[ToolSpec]:
        return ()

    async def call(self, call: ToolCall, context: ToolContext) -> ToolResult:
        return ToolResult(f"There is no tool named {call.name!r}.", "error")
