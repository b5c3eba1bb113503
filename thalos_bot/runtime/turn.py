"""One turn: the model/tool loop, with everything needed to end it cleanly at any point.

:class:`TurnExecution` runs the rounds (model call → tool calls → model call ...) and
keeps enough state that, when the turn is cancelled or fails half-way, the history it
leaves behind is still valid for the next turn: partial text becomes an assistant
message and every ``tool_use`` gets its ``tool_result``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog

from thalos_bot.domain.address import Address
from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.domain.events import (
    AgentEvent,
    Info,
    TextDelta,
    TokenUsage,
    ToolCallFinished,
    ToolCallRecord,
    ToolCallStarted,
    Usage,
)
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.messages import (
    Block,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    append_message,
)
from thalos_bot.domain.pricing import ModelUsages
from thalos_bot.domain.prompt import SystemPart
from thalos_bot.domain.security import SecurityContext
from thalos_bot.media.fit import json_bytes
from thalos_bot.media.store import MediaStore, MemoryMediaStore
from thalos_bot.providers.base import (
    ModelDone,
    ModelFallback,
    ModelProvider,
    ModelRequest,
    ModelTextDelta,
    ModelToolUse,
    ModelUsage,
    ProviderError,
)
from thalos_bot.runtime.limits import LIMIT_REACHED, LimitHit
from thalos_bot.runtime.media import fitted
from thalos_bot.runtime.repair import UNFINISHED_TOOL_RESULT, without_blank_text
from thalos_bot.runtime.window import ContextWindow
from thalos_bot.tools.approval import Approver
from thalos_bot.tools.types import ToolCall, ToolCatalog, ToolContext, ToolResult, ToolSpec

log = structlog.get_logger(__name__)

ARGUMENT_SUMMARY_CHARS = 160
ROUND_SEPARATOR = "\n\n"
CANCELLED_TOOL_RESULT = UNFINISHED_TOOL_RESULT
ROUND_LIMIT_RESULT = (
    "Not run: this turn reached its limit of tool rounds. Answer with what you have."
)
SPENDING_LIMIT_RESULT = "Not run: this turn stopped at a spending limit."
MODEL_FALLBACK = "model-fallback"

Emit = Callable[[AgentEvent], Awaitable[None]]
Checkpoint = Callable[[ModelUsages, TokenUsage], Awaitable[LimitHit | None]]
"""Called after each model round with what the turn has spent so far (its own model calls,
by model) and what its tools' runs spent (delegated subagents): a limit reached."""


@dataclass(frozen=True, slots=True)
class TurnLimits:
    model: str
    max_output_tokens: int
    max_tool_rounds: int
    max_parallel_tools: int


def _spent(before: TokenUsage, after: TokenUsage) -> TokenUsage:
    return TokenUsage(
        after.input_tokens - before.input_tokens,
        after.output_tokens - before.output_tokens,
        after.cache_read_tokens - before.cache_read_tokens,
        after.cache_write_tokens - before.cache_write_tokens,
    )


def summarize_arguments(arguments: Mapping[str, Any]) -> str:
    text = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), default=str)
    if len(text) > ARGUMENT_SUMMARY_CHARS:
        text = text[: ARGUMENT_SUMMARY_CHARS - 1] + "…"
    return text


@dataclass(slots=True)
class TurnExecution:
    session_id: SessionId
    agent: AgentDefinition
    caller: SecurityContext
    provider: ModelProvider
    tools: ToolCatalog
    limits: TurnLimits
    emit: Emit
    media: MediaStore = field(default_factory=MemoryMediaStore)
    depth: int = 0
    reply_to: Address | None = None
    new_messages: list[Message] = field(default_factory=list)
    text: str = ""
    """Everything streamed to the user so far, across rounds (TurnCompleted's text)."""
    usage: TokenUsage = TokenUsage()
    spent: ModelUsages = ModelUsages()
    """The turn's own model calls in ``usage``, split by the model that spent them (a
    fallback member's tokens are its own): what the turn adds to the day's ledger."""
    delegated: TokenUsage = TokenUsage()
    """Tokens its tools' own runs spent (a delegated subagent's turn), also in ``usage``:
    they count toward this session, but not again toward the day, since each of those
    runs is a turn of its own that wrote them to the ledger when it ended."""
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    window: ContextWindow | None = None
    """The turn's context window, once it runs (its unsaved state is committed with it)."""
    checkpoint: Checkpoint | None = None
    approver: Approver | None = None
    """Who the gate asks about an "ask" tool call (the turn request's)."""
    _round_text: str = ""
    _open_tool_uses: tuple[ToolUseBlock, ...] = ()
    _finished_results: dict[str, ToolResultBlock] = field(default_factory=dict)
    _media_fixes: dict[str, int] = field(default_factory=dict)
    _fallback_told: bool = False

    async def run(
        self, window: ContextWindow, user: str | Sequence[Block], system: Sequence[SystemPart]
    ) -> None:
        content = (TextBlock(user),) if isinstance(user, str) else tuple(user)
        self._add(Message("user", content))
        self.window = window
        specs = list(self.tools.specs_for(self.agent))
        working = list(window.history)
        for message in self.new_messages:
            working = append_message(working, message)
        fixed_bytes = json_bytes([p.text for p in system]) + json_bytes(
            [(t.name, t.description, dict(t.input_schema)) for t in specs]
        )
        retried = False
        for round_no in range(1, self.limits.max_tool_rounds + 1):
            final_round = round_no == self.limits.max_tool_rounds
            prepared = await window.prepare(working, system, specs)
            await self._count_all(prepared.usage)
            request = await self._request(
                prepared.messages, system, specs, fixed_bytes, final_round
            )
            before = self.usage
            try:
                assistant = await self._model_round(request, separate=round_no > 1)
            except ProviderError as exc:
                if not exc.too_long or retried or self._round_text:
                    raise
                # Compact against the window the refusal taught, then try once more.
                retried = True
                window.refused(exc.window)
                prepared = await window.prepare(working, system, specs)
                await self._count_all(prepared.usage)
                request = await self._request(
                    prepared.messages, system, specs, fixed_bytes, final_round
                )
                assistant = await self._model_round(request, separate=round_no > 1)
            window.observe(_spent(before, self.usage))
            if assistant.content:
                working = append_message(working, assistant)
            uses = assistant.tool_uses
            if not uses:
                return
            hit = (
                await self.checkpoint(self.spent, self.delegated)
                if self.checkpoint is not None
                else None
            )
            if hit is not None:
                await self._run_tools(uses, refuse=True, why=SPENDING_LIMIT_RESULT)
                data: dict[str, str | int | float | bool | list[str]]
                data = {"limit": hit.limit, "notice": hit.notice}
                await self.emit(Info(self.session_id, LIMIT_REACHED, data))
                log.info("turn_stopped_at_limit", session=self.session_id, limit=hit.limit)
                return
            results = await self._run_tools(uses, refuse=final_round)
            working = append_message(working, results)

    async def _request(
        self,
        messages: list[Message],
        system: Sequence[SystemPart],
        specs: Sequence[ToolSpec],
        fixed_bytes: int,
        final_round: bool,
    ) -> ModelRequest:
        fit = await fitted(messages, self.media, fixed_bytes=fixed_bytes)
        if fit.fixes and fit.fixes != self._media_fixes:
            self._media_fixes = dict(fit.fixes)
            log.info("request_media_fitted", session=self.session_id, **fit.fixes)
        return ModelRequest(
            model=self.limits.model,
            max_output_tokens=self.limits.max_output_tokens,
            system=system,
            messages=fit.messages,
            tools=specs,
            allow_tools=not final_round,
            media=fit.media,
        )

    async def _model_round(self, request: ModelRequest, *, separate: bool) -> Message:
        needs_separator = separate and bool(self.text)
        done: Message | None = None
        async with aclosing(self.provider.stream(request)) as events:
            async for event in events:
                if isinstance(event, ModelTextDelta):
                    if not event.text:
                        continue
                    if needs_separator:
                        needs_separator = False
                        self.text += ROUND_SEPARATOR
                        await self.emit(TextDelta(self.session_id, ROUND_SEPARATOR))
                    self._round_text += event.text
                    self.text += event.text
                    await self.emit(TextDelta(self.session_id, event.text))
                elif isinstance(event, ModelUsage):
                    await self._count(event.usage, event.model or request.model)
                elif isinstance(event, ModelDone):
                    done = event.message
                elif isinstance(event, ModelFallback) and not self._fallback_told:
                    self._fallback_told = True  # one line per turn, not per model call
                    data: dict[str, str | int | float | bool | list[str]]
                    data = {
                        "provider": event.provider,
                        "model": event.model,
                        "failed": event.failed,
                    }
                    await self.emit(Info(self.session_id, MODEL_FALLBACK, data))
                elif isinstance(event, ModelToolUse):
                    pass  # tools run once the whole response has arrived
        if done is None:
            raise ProviderError("The model's answer ended before it was complete.")
        self._round_text = ""
        done = without_blank_text(done)  # the API refuses whitespace-only text later
        if done.content:
            self._add(done)
        self._open_tool_uses = done.tool_uses
        self._finished_results = {}
        return done

    async def _run_tools(
        self, uses: Sequence[ToolUseBlock], *, refuse: bool, why: str = ROUND_LIMIT_RESULT
    ) -> Message:
        limiter = anyio.CapacityLimiter(max(1, self.limits.max_parallel_tools))
        context = ToolContext(
            self.caller,
            self.agent,
            self.session_id,
            approver=self.approver,
            depth=self.depth,
            reply_to=self.reply_to,
        )

        async def run_one(use: ToolUseBlock) -> None:
            async with limiter:
                await self._run_tool(use, context, refuse=refuse, why=why)

        async with anyio.create_task_group() as group:
            for use in uses:
                group.start_soon(run_one, use)
        message = Message("user", tuple(self._finished_results[u.id] for u in uses))
        self._add(message)
        self._open_tool_uses = ()
        return message

    async def _run_tool(
        self, use: ToolUseBlock, context: ToolContext, *, refuse: bool, why: str
    ) -> None:
        arguments = summarize_arguments(use.input)
        await self.emit(ToolCallStarted(self.session_id, use.id, use.name, arguments))
        started = time.monotonic()
        if refuse:
            result = ToolResult(why, "refused")
        else:
            try:
                result = await self.tools.call(ToolCall(use.id, use.name, use.input), context)
            except Exception:
                log.exception("tool_call_crashed", session=self.session_id, tool=use.name)
                result = ToolResult("The tool failed unexpectedly.", "error")
        duration = time.monotonic() - started
        self._finished_results[use.id] = ToolResultBlock(use.id, result.content, result.is_error)
        self.tool_calls.append(
            ToolCallRecord(use.id, use.name, arguments, result.outcome, duration)
        )
        await self.emit(
            ToolCallFinished(self.session_id, use.id, use.name, arguments, result.outcome, duration)
        )
        await self._count_delegated(result.usage)
        for event in result.events:
            await self.emit(event)
        for image in result.images:
            await self.emit(image)

    async def _count(self, usage: TokenUsage, model: str) -> None:
        if not usage.total:
            return
        self.usage += usage
        self.spent = self.spent.add(model, usage)
        await self.emit(Usage(self.session_id, usage))

    async def _count_delegated(self, usage: TokenUsage) -> None:
        """A tool's own model calls (a subagent's run): the session's, not the day's again."""
        if not usage.total:
            return
        self.usage += usage
        self.delegated += usage
        await self.emit(Usage(self.session_id, usage))

    async def _count_all(self, usages: ModelUsages) -> None:
        for model, usage in usages.parts:
            await self._count(usage, model)

    def _add(self, message: Message) -> None:
        self.new_messages = append_message(self.new_messages, message)

    @property
    def produced_output(self) -> bool:
        """True once the model said something or a tool ran: worth keeping in history."""
        return bool(self.text) or any(m.role == "assistant" for m in self.new_messages)

    def closed_messages(self) -> list[Message]:
        """The turn's messages, closed so the history stays valid after an interruption."""
        messages = list(self.new_messages)
        if self._round_text.strip():
            messages = append_message(
                messages, Message("assistant", (TextBlock(self._round_text),))
            )
        if self._open_tool_uses:
            results = tuple(
                self._finished_results.get(u.id)
                or ToolResultBlock(u.id, CANCELLED_TOOL_RESULT, is_error=True)
                for u in self._open_tool_uses
            )
            messages = append_message(messages, Message("user", results))
        return messages
