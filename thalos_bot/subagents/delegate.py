"""The ``agents`` tool source: ``agents__delegate`` hands a task to another agent.

The task runs as a subagent run of the named agent, one level deeper than the calling
turn, under the calling turn's caller (never anyone a tool argument names). Whom an
agent may delegate to is its ``delegates`` globs; an agent outside them is answered
exactly like an agent that does not exist. The tool is offered only to agents with
``delegates`` (and, as for every tool, only where their ``tools`` globs allow it).
The subagent's tokens come back on the result and count toward the calling turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from thalos_bot.domain.agents import AgentCatalog, AgentDefinition
from thalos_bot.subagents.outcome import RunError, RunFailure, RunOutcome
from thalos_bot.subagents.runner import SubagentRunner
from thalos_bot.tools.policy import matches_any
from thalos_bot.tools.source import SourceStatus, SourceTool
from thalos_bot.tools.types import ToolContext, ToolResult

log = structlog.get_logger(__name__)

SOURCE_NAME = "agents"
MAX_TASK_CHARS = 20_000

DELEGATE = SourceTool(
    "delegate",
    "Hand a self-contained task to another agent and get its final answer back. The "
    "other agent starts fresh: it sees only the task text, not this conversation, so "
    "write everything it needs into the task. Name the agent by its id.",
    {
        "type": "object",
        "properties": {
            "agent": {"type": "string", "minLength": 1, "description": "the agent's id"},
            "task": {"type": "string", "minLength": 1, "maxLength": MAX_TASK_CHARS},
        },
        "required": ["agent", "task"],
        "additionalProperties": False,
    },
)


def no_such_agent(name: str) -> ToolResult:
    """The one answer for an agent that does not exist and one this agent may not use."""
    return ToolResult(f"There is no agent called {name!r} to delegate to.", "error")


class AgentsToolSource:
    """A :class:`~thalos_bot.tools.source.ToolSource` named ``agents``. The runner is
    bound once the runtime exists (the runtime needs the catalog this source is in)."""

    def __init__(self, catalog: AgentCatalog, runner: SubagentRunner | None = None) -> None:
        self._catalog = catalog
        self._runner = runner

    def bind(self, runner: SubagentRunner) -> None:
        self._runner = runner

    @property
    def name(self) -> str:
        return SOURCE_NAME

    def tools(self) -> Sequence[SourceTool]:
        return (DELEGATE,) if any(agent.delegates for agent in self._catalog) else ()

    def status(self) -> SourceStatus:
        if not any(agent.delegates for agent in self._catalog):
            return SourceStatus("disabled", reason="no agent has delegates")
        return SourceStatus("ready", 1)

    def offers_to(self, agent: AgentDefinition) -> bool:
        return bool(agent.delegates)

    async def call(
        self, tool: str, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolResult:
        if tool != DELEGATE.name or not context.agent.delegates:
            return ToolResult(f"There is no agents tool named {tool!r}.", "error")
        name, task = arguments.get("agent"), arguments.get("task")
        if set(arguments) - {"agent", "task"}:
            return ToolResult("Not done: only 'agent' and 'task' are accepted.", "error")
        if not isinstance(name, str) or not name.strip():
            return ToolResult("Not done: 'agent' must be an agent id.", "error")
        if not isinstance(task, str) or not task.strip() or len(task) > MAX_TASK_CHARS:
            return ToolResult(
                f"Not done: 'task' must be text of 1 to {MAX_TASK_CHARS:,} characters.", "error"
            )
        target = self._catalog.find(name.strip())
        if target is None or not matches_any(context.agent.delegates, target.id):
            log.info("delegation_refused", agent=context.agent.id, target=name)
            return no_such_agent(name)
        if self._runner is None:
            return ToolResult("Delegation is not available right now.", "error")
        outcome = await self._runner.run(
            target.id,
            task,
            context.caller,
            depth=context.depth + 1,
            parent_session=context.session_id,
        )
        return _as_result(target, outcome)


def _as_result(target: AgentDefinition, outcome: RunOutcome) -> ToolResult:
    if not isinstance(outcome, RunError):
        text = outcome.text or f"{target.name} finished without an answer."
        return ToolResult(text, usage=outcome.usage)
    if outcome.code.is_limit:
        why = (
            "ran out of its token budget"
            if outcome.code is RunFailure.BUDGET_EXCEEDED
            else "ran out of time"
        )
        body = outcome.partial_text or "(nothing yet)"
        return ToolResult(
            f"[partial: {target.name} {why} and was stopped]\n{body}",
            "error",
            usage=outcome.usage,
        )
    if outcome.code is RunFailure.DEPTH_EXCEEDED:
        return ToolResult(
            "Not done: this task is already delegated as deep as allowed; do it yourself.",
            "refused",
        )
    return ToolResult(
        f"{target.name} could not finish the task: {outcome.detail}", "error", usage=outcome.usage
    )
