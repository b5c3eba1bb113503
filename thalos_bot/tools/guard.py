"""The result guard on the tool path: after a tool returns, before the model reads it.

:meth:`SourceCatalog.call` hands every result a source produced to :func:`guard_result`;
refusals the catalog writes itself need no screening. A result the guard annotates or
withholds carries a ``tool-result-guarded`` event onto the turn's stream, is logged
(rule names only, never the matched text) and counted in ``thalos.guard.verdicts``.
"""

from __future__ import annotations

import dataclasses

import structlog

from thalos_bot.domain.events import Info
from thalos_bot.guard.guard import ResultGuard
from thalos_bot.telemetry.otel import instruments
from thalos_bot.tools.types import ToolContext, ToolResult

log = structlog.get_logger(__name__)

TOOL_RESULT_GUARDED = "tool-result-guarded"


def guard_result(
    guard: ResultGuard | None, tool: str, result: ToolResult, context: ToolContext
) -> ToolResult:
    """``result`` as the model may read it."""
    if guard is None or not guard.enabled:
        return result
    screening = guard.screen(result.content, source=f"the tool {tool}")
    if screening.verdict == "allow":
        return result
    log.warning(
        TOOL_RESULT_GUARDED,
        tool=tool,
        verdict=screening.verdict,
        rules=list(screening.rules),
        session_id=context.session_id,
    )
    for rule in screening.rules:
        instruments().guarded("tool", screening.verdict, rule)
    event = Info(
        context.session_id,
        TOOL_RESULT_GUARDED,
        {"tool": tool, "verdict": screening.verdict, "rules": list(screening.rules)},
    )
    outcome = "refused" if screening.verdict == "withhold" else result.outcome
    return dataclasses.replace(
        result, content=screening.text, outcome=outcome, events=(*result.events, event)
    )
