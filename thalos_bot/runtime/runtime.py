"""The agent runtime: owns sessions and runs turns as tasks in its own task group.

Each turn runs in a task that sends events into a memory object stream; the caller of
:meth:`Runtime.run_turn_streaming` reads them. That keeps cancellation simple and prompt
(``cancel`` cancels the turn's scope, wherever it is awaiting) and guarantees that every
stream ends with exactly one terminal event, whatever happened inside.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import TracebackType
from typing import Self

import anyio
import structlog
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from thalos_bot.domain.agents import AgentCatalog, AgentDefinition
from thalos_bot.domain.clock import utc_now
from thalos_bot.domain.errors import AgentError, ErrorCode
from thalos_bot.domain.events import (
    AgentEvent,
    Info,
    TerminalEvent,
    TextDelta,
    TokenUsage,
    TurnCompleted,
    TurnFailed,
)
from thalos_bot.domain.ids import SessionId, new_session_id
from thalos_bot.domain.messages import Message
from thalos_bot.domain.pricing import ModelUsages
from thalos_bot.domain.prompt import PromptContributor, SystemPart
from thalos_bot.domain.security import SecurityContext
from thalos_bot.media.store import MediaStore, MemoryMediaStore
from thalos_bot.providers.base import ModelProvider, ProviderError
from thalos_bot.providers.routing import UNKNOWN_WINDOW_TOKENS, FixedWindow, ProviderRoute
from thalos_bot.runtime.compaction import CompactionPolicy
from thalos_bot.runtime.limits import BUDGET_ALERT, LimitHit, Spending, SpendingLimits
from thalos_bot.runtime.media import user_content
from thalos_bot.runtime.protocol import SessionInfo, TurnRequest, TurnResult
from thalos_bot.runtime.repair import repair_history
from thalos_bot.runtime.turn import Checkpoint, Emit, TurnExecution, TurnLimits
from thalos_bot.runtime.window import ContextWindow, WindowLimits
from thalos_bot.storage.protocol import OutboxEntry, SessionRecord, SessionStore, Spend
from thalos_bot.telemetry.otel import instruments, tracer
from thalos_bot.tools.types import EmptyToolCatalog, ToolCatalog

log = structlog.get_logger(__name__)

EVENT_BUFFER = 1024
MAX_USER_TEXT = 100_000


@dataclass(frozen=True, slots=True)
class RuntimeSettings:
    model: str
    max_output_tokens: int = 4096
    max_tool_rounds: int = 8
    context_window: int = 200_000
    max_parallel_tools: int = 4
    compaction: CompactionPolicy = field(default_factory=CompactionPolicy)


@dataclass(slots=True)
class _Turn:
    request: TurnRequest
    record: SessionRecord
    agent: AgentDefinition
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    started: float = field(default_factory=time.monotonic)
    done: bool = False
    alert: str | None = None
    """What to tell the person before the answer (a daily limit half or mostly spent)."""


class Runtime:
    """The :class:`~thalos_bot.runtime.protocol.AgentRuntime`. Use as ``async with``."""

    def __init__(
        self,
        *,
        catalog: AgentCatalog,
        store: SessionStore,
        provider: ModelProvider,
        settings: RuntimeSettings,
        tools: ToolCatalog | None = None,
        contributors: Sequence[PromptContributor] = (),
        clock: Callable[[], datetime] = utc_now,
        limits: SpendingLimits | None = None,
        media: MediaStore | None = None,
        routes: Mapping[str, ProviderRoute] | None = None,
    ) -> None:
        """``routes`` gives agents (by id) their own provider and context window; an
        agent without one uses ``provider`` and ``settings.context_window``."""
        self.catalog = catalog
        self.store = store
        self.provider = provider
        self.settings = settings
        self.tools: ToolCatalog = tools or EmptyToolCatalog()
        self.contributors = list(contributors)
        self.clock = clock
        self.limits = limits
        self.media: MediaStore = media or MemoryMediaStore()
        self.routes = dict(routes or {})
        self._default_route = ProviderRoute(provider, FixedWindow(settings.context_window))
        self._running: dict[SessionId, _Turn] = {}
        self._repair_logged: set[SessionId] = set()
        self._group: TaskGroup | None = None
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> Self:
        self._group = await self._stack.enter_async_context(anyio.create_task_group())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for turn in list(self._running.values()):
            turn.scope.cancel()
        self._group = None
        await self._stack.__aexit__(exc_type, exc, tb)

    # -- sessions -----------------------------------------------------------------

    async def create_session(self, agent_id: str, caller: SecurityContext) -> SessionInfo:
        if caller.anonymous:
            raise AgentError(ErrorCode.INVALID_REQUEST, "A session needs a known caller.")
        agent = self.catalog.get(agent_id)
        now = self.clock()
        record = SessionRecord(new_session_id(), agent.id, caller.id, "open", now, now)
        await self.store.create(record)
        log.info("session_created", session=record.id, agent=agent.id)
        return self._info(record)

    async def session_info(self, session_id: SessionId) -> SessionInfo | None:
        record = await self.store.get(session_id)
        return None if record is None else self._info(record)

    async def close_session(self, session_id: SessionId, caller: SecurityContext) -> None:
        record = await self._owned(session_id, caller)
        if session_id in self._running:
            raise AgentError(
                ErrorCode.SESSION_BUSY, "A turn is still running; cancel it before ending."
            )
        if record.status == "closed":
            raise AgentError(ErrorCode.SESSION_CLOSED)
        await self.store.close(session_id, self.clock())
        log.info("session_closed", session=session_id)

    def is_busy(self, session_id: SessionId) -> bool:
        return session_id in self._running

    async def cancel(self, session_id: SessionId, caller: SecurityContext) -> bool:
        turn = self._running.get(session_id)
        if turn is None:
            await self._owned(session_id, caller)
            return False
        if turn.record.owner != caller.id:
            raise AgentError(ErrorCode.PERMISSION_DENIED)
        turn.scope.cancel()
        return True

    # -- turns --------------------------------------------------------------------

    async def run_turn(self, request: TurnRequest) -> TurnResult:
        async with _TurnStream(self, request) as stream:
            events = [event async for event in stream]
        terminal = events[-1]
        if not isinstance(terminal, TurnCompleted | TurnFailed):
            raise TypeError("a turn stream ended without a terminal event")
        return TurnResult(events, terminal)

    async def run_turn_streaming(self, request: TurnRequest) -> AsyncIterator[AgentEvent]:
        async with _TurnStream(self, request) as stream:
            async for event in stream:
                yield event

    async def _admit(self, request: TurnRequest) -> _Turn:
        if not request.text.strip() and not request.attachments:
            raise AgentError(ErrorCode.INVALID_REQUEST, "The message is empty.")
        if len(request.text) > MAX_USER_TEXT:
            raise AgentError(
                ErrorCode.INVALID_REQUEST,
                f"The message is too long (at most {MAX_USER_TEXT:,} characters).",
            )
        record = await self._owned(request.session_id, request.caller)
        if record.status == "closed":
            raise AgentError(ErrorCode.SESSION_CLOSED)
        if self.limits is not None and request.session_id not in self._running:
            hit = await self.limits.refusal(request.caller.id, record.usage, record.agent_id)
            if hit is not None:
                log.info("turn_refused_at_limit", session=request.session_id, limit=hit.limit)
                raise AgentError(ErrorCode.LIMIT_REACHED, hit.notice)
        if request.session_id in self._running:
            raise AgentError(ErrorCode.SESSION_BUSY)
        agent = self.catalog.get(record.agent_id)
        if self._group is None:
            raise RuntimeError("the runtime is not running; use `async with Runtime(...)`")
        turn = _Turn(request, record, agent)
        self._running[request.session_id] = turn  # no await since the busy check
        if self.limits is not None:
            try:
                turn.alert = await self.limits.alert(request.caller.id)
            except Exception:  # noqa: BLE001 - an alert never stops a turn
                log.warning("budget_alert_failed", session=request.session_id)
        return turn

    async def _drive(self, turn: _Turn, send: MemoryObjectSendStream[AgentEvent]) -> None:
        """Run one turn; always send exactly one terminal event, then close ``send``."""
        sid = turn.request.session_id
        first_delta: float | None = None

        async def emit(event: AgentEvent) -> None:
            nonlocal first_delta
            if first_delta is None and isinstance(event, TextDelta):
                first_delta = time.monotonic() - turn.started
            try:
                await send.send(event)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                turn.scope.cancel()  # nobody is listening any more

        route = self.route(turn.agent)
        execution = TurnExecution(
            session_id=sid,
            agent=turn.agent,
            caller=turn.request.caller,
            provider=route.provider,
            tools=self.tools if route.offers_tools else EmptyToolCatalog(),
            limits=self._limits(turn.agent),
            emit=emit,
            checkpoint=self._checkpoint(turn),
            media=self.media,
            approver=turn.request.approver,
            depth=turn.request.depth,
            reply_to=turn.request.reply_to,
        )
        terminal: TerminalEvent | None = None
        span = tracer().start_span(
            f"invoke_agent {turn.agent.id}",
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.id": turn.agent.id,
                "gen_ai.agent.name": turn.agent.name,
                "gen_ai.conversation.id": sid,
            },
        )
        try:
            with trace.use_span(span, end_on_exit=False), turn.scope:
                if turn.alert is not None:
                    await emit(Info(sid, BUDGET_ALERT, {"notice": turn.alert}))
                terminal = await self._execute(turn, execution, emit)
        finally:
            with anyio.CancelScope(shield=True):
                if terminal is None:
                    terminal = self._failed(turn, execution, AgentError(ErrorCode.CANCELLED))
                terminal = await self._finish(turn, execution, terminal)
                _end_turn_span(span, turn, terminal, first_delta)
                try:
                    send.send_nowait(terminal)
                except anyio.WouldBlock:
                    with anyio.move_on_after(5):
                        await send.send(terminal)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass
                await send.aclose()

    async def _execute(
        self,
        turn: _Turn,
        execution: TurnExecution,
        emit: Emit,
    ) -> TerminalEvent:
        request = turn.request
        try:
            window = await self._window(turn, emit)
            system = await self._system_prompt(turn, emit)
            content = await user_content(request.text, request.attachments, self.media)
            await execution.run(window, content, system)
        except ProviderError as exc:
            log.warning("turn_provider_error", session=request.session_id, reason=str(exc))
            return self._failed(
                turn, execution, AgentError(ErrorCode.PROVIDER_ERROR, exc.user_message)
            )
        except AgentError as exc:
            return self._failed(turn, execution, exc)
        except Exception:
            log.exception("turn_crashed", session=request.session_id)
            return self._failed(turn, execution, AgentError(ErrorCode.INTERNAL_ERROR))
        return TurnCompleted(
            request.session_id,
            execution.text,
            execution.usage,
            tuple(execution.tool_calls),
            time.monotonic() - turn.started,
        )

    async def _window(self, turn: _Turn, emit: Emit) -> ContextWindow:
        """The session's context: its summary and the history after it (not all of it)."""
        route, model = self.route(turn.agent), self._limits(turn.agent).model
        known = await route.windows.context_window(model)
        limits = WindowLimits(
            model=model,
            context_window=known or UNKNOWN_WINDOW_TOKENS,
            max_output_tokens=self._limits(turn.agent).max_output_tokens,
        )
        loaded = await self.store.load_context(turn.request.session_id, max_chars=limits.load_chars)
        return ContextWindow(
            session_id=turn.request.session_id,
            loaded=loaded,
            store=self.store,
            provider=route.provider,
            policy=self.settings.compaction,
            limits=limits,
            emit=emit,
            repair=lambda messages: self._repaired(turn.request.session_id, messages),
            learned=lambda tokens: route.windows.learn_window(model, tokens),
        )

    async def _system_prompt(self, turn: _Turn, emit: Emit) -> list[SystemPart]:
        parts = [SystemPart(turn.agent.instructions)] if turn.agent.instructions else []
        for contributor in self.contributors:
            try:
                contribution = await contributor.contribute(
                    turn.agent, turn.request.caller, turn.request.session_id, turn.request.text
                )
            except Exception:
                log.exception("prompt_contributor_failed", contributor=type(contributor).__name__)
                continue
            parts.extend(contribution.parts)
            for event in contribution.events:
                await emit(event)
        return parts

    def _repaired(self, session_id: SessionId, history: list[Message]) -> list[Message]:
        """What is sent, in a shape the provider accepts. A session stored broken (by an
        older version, say) is repaired before every request, and logged once. The repair
        runs on the request, not on the loaded history, so the compaction boundary keeps
        counting stored messages."""
        repaired = repair_history(history)
        if repaired.changed and session_id not in self._repair_logged:
            self._repair_logged.add(session_id)
            log.warning("history_repaired", session=session_id, **repaired.fixes)
        return repaired.messages

    def _failed(self, turn: _Turn, execution: TurnExecution, error: AgentError) -> TurnFailed:
        return TurnFailed(
            turn.request.session_id,
            error,
            execution.text,
            execution.usage,
            tuple(execution.tool_calls),
            time.monotonic() - turn.started,
        )

    async def _finish(
        self, turn: _Turn, execution: TurnExecution, terminal: TerminalEvent
    ) -> TerminalEvent:
        """Commit the turn, release the session, log it; return the terminal event to
        send (a completed turn whose history could not be saved is reported failed, so
        nobody believes an exchange was kept that was not)."""
        sid = turn.request.session_id
        context = execution.window.unsaved if execution.window is not None else None
        stored = False
        try:
            spend = self._spend(turn, execution.spent)
            if isinstance(terminal, TurnCompleted):
                entry = _outbox_entry(turn.request, terminal)
                await self.store.commit_turn(
                    sid,
                    execution.new_messages,
                    execution.usage,
                    self.clock(),
                    context=context,
                    outbox=entry,
                    spend=spend,
                )
                stored = True
                if entry is not None:
                    terminal = replace(terminal, delivery=entry.address.key)
            elif execution.produced_output:
                await self.store.commit_turn(
                    sid,
                    execution.closed_messages(),
                    execution.usage,
                    self.clock(),
                    context=context,
                    spend=spend,
                )
                stored = True
        except Exception:
            log.exception("turn_commit_failed", session=sid)
            if isinstance(terminal, TurnCompleted):
                terminal = self._failed(turn, execution, AgentError(ErrorCode.INTERNAL_ERROR))
        finally:
            turn.done = True
            self._running.pop(sid, None)
        if not stored:  # the tokens were spent all the same: the day still counts them
            await self._record_usage(turn, execution.spent)
        outcome = "completed" if isinstance(terminal, TurnCompleted) else terminal.error.code.value
        usage = terminal.usage
        log.info(
            "turn_finished",
            session=sid,
            agent=turn.agent.id,
            outcome=outcome,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            tool_calls=[f"{c.name}:{c.outcome}" for c in terminal.tool_calls],
            elapsed_s=round(terminal.elapsed_s, 3),
        )
        return terminal

    # -- spending -----------------------------------------------------------------

    def _checkpoint(self, turn: _Turn) -> Checkpoint | None:
        limits = self.limits
        if limits is None:
            return None

        async def checkpoint(spent: ModelUsages, delegated: TokenUsage) -> LimitHit | None:
            # The delegated runs' tokens are the session's, but already in the day's ledger.
            session = turn.record.usage + delegated
            return await limits.check(turn.request.caller.id, session, spent, turn.agent.id)

        return checkpoint

    def _spend(self, turn: _Turn, spent: ModelUsages) -> Spend | None:
        """The turn's spend for the ledger, written with the turn (None: no limits); each
        model call's tokens priced as the model that answered it."""
        if self.limits is None:
            return None
        return self.limits.spend(
            turn.request.caller.id, spent, turn.request.session_id, turn.agent.id
        )

    async def _record_usage(self, turn: _Turn, spent: ModelUsages) -> None:
        if self.limits is None:
            return
        try:
            await self.limits.record(turn.request.caller.id, spent, turn.agent.id)
        except Exception:
            log.exception("usage_record_failed", session=turn.request.session_id)

    async def spending(self, session: SessionInfo) -> Spending | None:
        """Tokens and estimated cost of ``session`` and of its owner's day, for /status
        (None when no limits are configured)."""
        if self.limits is None:
            return None
        agent = self.catalog.find(session.agent_id) or self.catalog.default
        model = self._limits(agent).model
        return await self.limits.spending(session.owner, session.id, session.usage, model)

    # -- helpers ------------------------------------------------------------------

    async def _owned(self, session_id: SessionId, caller: SecurityContext) -> SessionRecord:
        record = await self.store.get(session_id)
        if record is None:
            raise AgentError(ErrorCode.SESSION_NOT_FOUND)
        if caller.anonymous or record.owner != caller.id:
            raise AgentError(ErrorCode.PERMISSION_DENIED)
        return record

    def route(self, agent: AgentDefinition) -> ProviderRoute:
        """Where ``agent``'s model calls go."""
        return self.routes.get(agent.id, self._default_route)

    def _limits(self, agent: AgentDefinition) -> TurnLimits:
        return TurnLimits(
            model=agent.model or self.settings.model,
            max_output_tokens=agent.max_output_tokens or self.settings.max_output_tokens,
            max_tool_rounds=self.settings.max_tool_rounds,
            max_parallel_tools=self.settings.max_parallel_tools,
        )

    def _info(self, record: SessionRecord) -> SessionInfo:
        agent = self.catalog.find(record.agent_id) or self.catalog.default
        window = self.route(agent).windows.known_window(self._limits(agent).model)
        return SessionInfo(
            id=record.id,
            agent_id=record.agent_id,
            owner=record.owner,
            status=record.status,
            created_at=record.created_at,
            updated_at=record.updated_at,
            turns=record.turns,
            usage=record.usage,
            busy=record.id in self._running,
            context_tokens=record.context_tokens,
            context_window=window or 0,
        )


def _outbox_entry(request: TurnRequest, terminal: TurnCompleted) -> OutboxEntry | None:
    """The final answer's outbox row, when the request names where it goes."""
    if request.deliver_to is None or not terminal.text.strip():
        return None
    return OutboxEntry(request.deliver_to, terminal.text)


def _end_turn_span(
    span: trace.Span, turn: _Turn, terminal: TerminalEvent, first_delta: float | None
) -> None:
    outcome = "completed" if isinstance(terminal, TurnCompleted) else terminal.error.code.value
    span.set_attributes(
        {
            "thalos.turn.outcome": outcome,
            "gen_ai.usage.input_tokens": terminal.usage.input_tokens,
            "gen_ai.usage.output_tokens": terminal.usage.output_tokens,
            "thalos.turn.tool_calls": len(terminal.tool_calls),
        }
    )
    if isinstance(terminal, TurnFailed) and terminal.error.code is not ErrorCode.CANCELLED:
        span.set_status(Status(StatusCode.ERROR, terminal.error.code.value))
    span.end()
    instruments().turn(outcome, turn.agent.id, terminal.elapsed_s, first_delta)


class _TurnStream:
    """``async with`` over one turn's events; leaving early cancels the turn."""

    def __init__(self, runtime: Runtime, request: TurnRequest) -> None:
        self._runtime = runtime
        self._request = request
        self._turn: _Turn | None = None

    async def __aenter__(self) -> AsyncIterator[AgentEvent]:
        try:
            self._turn = await self._runtime._admit(self._request)  # noqa: SLF001
        except AgentError as exc:
            return _single(TurnFailed(self._request.session_id, exc))
        except Exception:  # e.g. the store failed to read the session
            log.exception("turn_admission_failed", session=self._request.session_id)
            error = AgentError(ErrorCode.INTERNAL_ERROR)
            return _single(TurnFailed(self._request.session_id, error))
        send, receive = anyio.create_memory_object_stream[AgentEvent](EVENT_BUFFER)
        self._receive = receive
        group = self._runtime._group  # noqa: SLF001
        assert group is not None  # checked by _admit
        group.start_soon(self._runtime._drive, self._turn, send)  # noqa: SLF001
        return receive

    async def __aexit__(self, *exc_info: object) -> None:
        if self._turn is None:
            return
        if not self._turn.done:
            self._turn.scope.cancel()
        await self._receive.aclose()


async def _single(event: AgentEvent) -> AsyncIterator[AgentEvent]:
    yield event
