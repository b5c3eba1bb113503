"""The subagent runner: one detached turn, buffered, in a session of its own.

A sibling of the pump, above the runtime. :meth:`SubagentRunner.run` creates a fresh
session owned by the caller, runs exactly one turn with the task as its only user
message (never streamed: nobody watches), and closes the session on every path,
including the caller's own cancellation. It never raises for a run that went wrong:
the answer is a :class:`~thalos_bot.subagents.outcome.RunError` with a stable code.

The deadline cancels the turn in flight through ``runtime.cancel``; a turn that
finishes anyway, before that cancel reached it, is a success that "arrived late". The
token budget is settled after the turn, against what it spent.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import anyio
import anyio.lowlevel
import structlog

from thalos_bot.domain.address import Address
from thalos_bot.domain.errors import AgentError, ErrorCode
from thalos_bot.domain.events import TurnCompleted, TurnFailed
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.runtime.protocol import AgentRuntime, TurnRequest, TurnResult
from thalos_bot.subagents.outcome import RunError, RunFailure, RunOutcome, RunResult

log = structlog.get_logger(__name__)

CANCEL_GRACE = 10.0
"""Seconds a turn gets to wind down once cancelled before the runner stops waiting."""


@dataclass(frozen=True, slots=True)
class Budget:
    max_total_tokens: int = 50_000
    deadline: float = 600.0
    """Seconds."""


@dataclass(slots=True)
class _Watch:
    finished: bool = False
    deadline_hit: bool = False
    caller_cancelled: bool = False


class SubagentRunner:
    def __init__(
        self, runtime: AgentRuntime, *, budget: Budget | None = None, max_depth: int = 2
    ) -> None:
        self.runtime = runtime
        self.budget = budget or Budget()
        self.max_depth = max_depth

    async def run(
        self,
        agent_id: str,
        task: str,
        caller: SecurityContext,
        *,
        budget: Budget | None = None,
        depth: int = 1,
        parent_session: SessionId | None = None,
        reply_to: Address | None = None,
    ) -> RunOutcome:
        """Run ``task`` as one turn of ``agent_id`` at ``depth`` (1: a subagent of a
        person's turn or of the host). ``parent_session`` is lineage for the log only.
        ``reply_to`` is where the run's own tools (a schedule) would answer."""
        limits = budget or self.budget
        started = time.monotonic()
        bound = log.bind(agent=agent_id, depth=depth, parent_session=parent_session)
        if depth > self.max_depth:
            bound.info("subagent_refused", code=RunFailure.DEPTH_EXCEEDED.value)
            return RunError(RunFailure.DEPTH_EXCEEDED)
        try:
            info = await self.runtime.create_session(agent_id, caller)
        except AgentError as exc:
            code = (
                RunFailure.AGENT_NOT_FOUND
                if exc.code is ErrorCode.AGENT_NOT_FOUND
                else RunFailure.TURN_FAILED
            )
            bound.info("subagent_refused", code=code.value, cause=exc.code.value)
            return RunError(code, cause=exc.code)
        except Exception:  # noqa: BLE001 - the runner answers with a code, never raises
            bound.exception("subagent_session_failed")
            return RunError(RunFailure.TURN_FAILED, cause=ErrorCode.INTERNAL_ERROR)
        session = info.id
        bound = bound.bind(session=session)
        bound.info("subagent_started", max_total_tokens=limits.max_total_tokens)
        watch = _Watch()
        try:
            request = TurnRequest(session, caller, task, reply_to=reply_to, depth=depth)
            result = await self._turn(request, limits, watch)
        finally:
            with anyio.CancelScope(shield=True):
                await self._close(session, caller, bound)
        # The caller's own cancellation goes on to the caller, now the session is closed.
        await anyio.lowlevel.checkpoint_if_cancelled()
        outcome = _settle(session, result, limits, watch, time.monotonic() - started)
        if isinstance(outcome, RunResult):
            if outcome.arrived_late:
                bound.warning("subagent_arrived_late", elapsed_s=round(outcome.elapsed_s, 3))
            bound.info("subagent_finished", outcome="completed", tokens=outcome.usage.total)
        else:
            bound.info(
                "subagent_finished",
                outcome=outcome.code.value,
                cause=outcome.cause.value if outcome.cause else None,
                tokens=outcome.usage.total,
            )
        return outcome

    async def _turn(self, request: TurnRequest, limits: Budget, watch: _Watch) -> TurnResult:
        """The turn, shielded from the caller's cancellation so that it always ends
        through ``runtime.cancel`` (and so can always be closed); a watcher cancels it
        at the deadline or when the caller is cancelled."""
        shield = anyio.CancelScope(shield=True)

        async def watcher() -> None:
            try:
                await anyio.sleep(limits.deadline)
                watch.deadline_hit = True
            except anyio.get_cancelled_exc_class():
                watch.caller_cancelled = not watch.finished
                raise
            finally:
                if not watch.finished:
                    with anyio.CancelScope(shield=True):
                        await self._cancel(request)
                    shield.deadline = anyio.current_time() + CANCEL_GRACE

        async with anyio.create_task_group() as group:
            group.start_soon(watcher)
            with shield:
                result = await self.runtime.run_turn(request)
            watch.finished = True
            group.cancel_scope.cancel()
        if shield.cancelled_caught:
            return TurnResult((), TurnFailed(request.session_id, AgentError(ErrorCode.CANCELLED)))
        return result

    async def _cancel(self, request: TurnRequest) -> None:
        try:
            await self.runtime.cancel(request.session_id, request.caller)
        except Exception:
            log.exception("subagent_cancel_failed", session=request.session_id)

    async def _close(
        self, session: SessionId, caller: SecurityContext, bound: structlog.BoundLogger
    ) -> None:
        try:
            await self.runtime.close_session(session, caller)
        except AgentError as exc:
            if exc.code is not ErrorCode.SESSION_CLOSED:
                bound.warning("subagent_session_not_closed", cause=exc.code.value)
        except Exception:  # noqa: BLE001 - closing must not turn a result into a crash
            bound.exception("subagent_session_not_closed")


def _settle(
    session: SessionId, result: TurnResult, limits: Budget, watch: _Watch, elapsed: float
) -> RunOutcome:
    terminal = result.terminal
    usage = terminal.usage
    if usage.total > limits.max_total_tokens:
        return RunError(
            RunFailure.BUDGET_EXCEEDED,
            partial_text=result.text,
            usage=usage,
            tool_calls=terminal.tool_calls,
            elapsed_s=elapsed,
        )
    if isinstance(terminal, TurnCompleted):
        return RunResult(
            session, terminal.text, usage, terminal.tool_calls, elapsed, watch.deadline_hit
        )
    code = (
        RunFailure.DEADLINE_EXCEEDED
        if watch.deadline_hit and terminal.error.code is ErrorCode.CANCELLED
        else RunFailure.TURN_FAILED
    )
    return RunError(
        code,
        partial_text=terminal.partial_text,
        usage=usage,
        tool_calls=terminal.tool_calls,
        elapsed_s=elapsed,
        cause=None if code is RunFailure.DEADLINE_EXCEEDED else terminal.error.code,
    )
