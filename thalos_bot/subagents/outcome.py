"""What a subagent run gives back: a buffered result, or a typed failure.

The runner never raises for a run that went wrong; the caller reads ``code``. Both
shapes carry what the run spent, so a stopped run still counts toward its parent.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from thalos_bot.domain.errors import ErrorCode
from thalos_bot.domain.events import TokenUsage, ToolCallRecord
from thalos_bot.domain.ids import SessionId


class RunFailure(StrEnum):
    AGENT_NOT_FOUND = "agent_not_found"
    BUDGET_EXCEEDED = "budget_exceeded"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    DEPTH_EXCEEDED = "depth_exceeded"
    TURN_FAILED = "turn_failed"
    """The turn itself failed (the provider, a crash): ``cause`` says which."""

    @property
    def is_limit(self) -> bool:
        """A limit stopped the run (its text, if any, is partial)."""
        return self in {RunFailure.BUDGET_EXCEEDED, RunFailure.DEADLINE_EXCEEDED}


_DETAIL = {
    RunFailure.AGENT_NOT_FOUND: "There is no agent with that id.",
    RunFailure.BUDGET_EXCEEDED: "The run used more tokens than its budget allows.",
    RunFailure.DEADLINE_EXCEEDED: "The run did not finish before its deadline.",
    RunFailure.DEPTH_EXCEEDED: "Agents may not hand work down any further.",
    RunFailure.TURN_FAILED: "The run failed.",
}


@dataclass(frozen=True, slots=True)
class RunResult:
    """A run that completed: its final text and what it took."""

    session_id: SessionId
    text: str
    usage: TokenUsage
    tool_calls: tuple[ToolCallRecord, ...]
    elapsed_s: float
    arrived_late: bool = False
    """It finished after its deadline had asked it to stop (still a success)."""

    @property
    def ok(self) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class RunError:
    """A run that did not complete. ``partial_text`` is what it said before it stopped."""

    code: RunFailure
    detail: str = ""
    partial_text: str = ""
    usage: TokenUsage = TokenUsage()
    tool_calls: tuple[ToolCallRecord, ...] = ()
    elapsed_s: float = 0.0
    cause: ErrorCode | None = None

    def __post_init__(self) -> None:
        if not self.detail:
            object.__setattr__(self, "detail", _DETAIL[self.code])

    @property
    def ok(self) -> bool:
        return False


RunOutcome = RunResult | RunError
