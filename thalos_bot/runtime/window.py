"""One turn's view of a session's context window: what each model round is sent.

A :class:`ContextWindow` starts from what the store loaded (the summary and the history
after it) and, before every model round, turns the turn's working history into the
messages to send (:meth:`ContextWindow.prepare`): masked, measured once, and compacted
when the request would pass the threshold. Compacting asks the model for a summary of
the older turns (a separate, unstreamed call) and stores it with the session, so it is
made once and survives a restart; when that call fails, the older turns are dropped
instead and the user is told. After each round, :meth:`ContextWindow.observe` keeps the
prompt size the provider reported, which calibrates the next estimate.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import TypeVar

import anyio.lowlevel
import structlog

from thalos_bot.domain.events import AgentEvent, Info, TokenUsage
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.messages import Message
from thalos_bot.domain.pricing import ModelUsages
from thalos_bot.domain.prompt import SystemPart
from thalos_bot.providers.base import ModelDone, ModelProvider, ModelUsage, ProviderError
from thalos_bot.runtime.compaction import (
    CHARS_PER_TOKEN,
    CompactionPolicy,
    Steps,
    calibrated_tokens,
    choose_cut,
    first_turn_start,
    fixed_chars,
    reported_scale,
    summary_chars,
    summary_request_steps,
    tokens,
    view_steps,
    with_summary,
)
from thalos_bot.storage.protocol import ContextState, LoadedHistory, SessionStore
from thalos_bot.tools.types import ToolSpec

log = structlog.get_logger(__name__)

Emit = Callable[[AgentEvent], Awaitable[None]]

LOAD_WINDOWS = 4
"""How many context windows' worth of stored characters a turn reads at most."""


T = TypeVar("T")


async def cooperatively(steps: Steps[T]) -> T:
    """Run a step generator on the event loop, letting other tasks run between steps."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            result: T = done.value
            return result
        await anyio.lowlevel.checkpoint()


@dataclass(frozen=True, slots=True)
class WindowLimits:
    model: str
    context_window: int
    max_output_tokens: int

    @property
    def load_chars(self) -> int:
        return self.context_window * CHARS_PER_TOKEN * LOAD_WINDOWS


@dataclass(frozen=True, slots=True)
class Prepared:
    messages: list[Message]
    """What to send this round."""
    usage: ModelUsages
    """What preparing it cost (a summary call), by model, to add to the turn's usage."""


class ContextWindow:
    """See the module docstring. One per turn; not shared between turns."""

    def __init__(
        self,
        *,
        session_id: SessionId,
        loaded: LoadedHistory,
        store: SessionStore,
        provider: ModelProvider,
        policy: CompactionPolicy,
        limits: WindowLimits,
        emit: Emit,
        repair: Callable[[list[Message]], list[Message]] | None = None,
        learned: Callable[[int], None] | None = None,
    ) -> None:
        self.session_id = session_id
        self.state = loaded.context
        self._store = store
        self._provider = provider
        self._policy = policy
        self._limits = limits
        self._emit = emit
        self._repair = repair
        """Applied to every request's messages (see ``Runtime._repaired``)."""
        self._learned = learned
        """Told the window a too-long refusal taught (see :meth:`refused`)."""
        capped = loaded.first_index > self.state.summary_until
        # A load cut short by its size cap starts anywhere: begin at a real turn start.
        # One that starts at the summary boundary (or at 0) starts where a cut was made,
        # or is a stored broken shape that the repair before each request heals.
        skip = first_turn_start(loaded.messages) if capped else 0
        self.history: list[Message] = loaded.messages[skip:]
        """The stored history the turn builds on: from the first turn start after the
        summary boundary."""
        self._first_index = loaded.first_index + skip
        self._skip = 0
        self._estimate = 0
        self._summary_failed = False
        self._unsaved = False
        if capped:
            log.warning(
                "history_load_capped",
                session=session_id,
                summary_until=self.state.summary_until,
                loaded_from=self._first_index,
            )

    @property
    def limit_tokens(self) -> int:
        """The prompt size at which a request is compacted."""
        window, output = self._limits.context_window, self._limits.max_output_tokens
        return max(1, min(int(window * self._policy.threshold), window - output))

    async def prepare(
        self, working: Sequence[Message], system: Sequence[SystemPart], tools: Sequence[ToolSpec]
    ) -> Prepared:
        """The messages to send for ``working`` (the loaded history plus this turn so
        far), compacting first when they would not fit."""
        policy = self._policy
        visible, sizes = await cooperatively(view_steps(working[self._skip :], policy))
        fixed = fixed_chars(system, tools)
        estimate = tokens(fixed + summary_chars(self.state.summary) + sizes.total)
        usage = ModelUsages()
        if calibrated_tokens(estimate, self.state) > self.limit_tokens:
            summarizing = policy.enabled and not self._summary_failed
            reserve = (
                policy.summary_max_tokens * CHARS_PER_TOKEN
                if summarizing
                else summary_chars(self.state.summary)
            )
            target = self.limit_tokens / 2 / reported_scale(self.state)
            room = int(target * CHARS_PER_TOKEN) - fixed - reserve
            cut = choose_cut(sizes, keep_recent_turns=policy.keep_recent_turns, room_chars=room)
            if cut is not None:
                turns = bisect.bisect_left(sizes.starts, cut)
                usage = await self._compact(visible[:cut], cut, turns)
                visible = visible[cut:]
                estimate = tokens(fixed + summary_chars(self.state.summary) + sizes.tail(cut))
        self._estimate = estimate
        messages = with_summary(self.state.summary, visible)
        if self._repair is not None:
            messages = self._repair(messages)
        return Prepared(messages, usage)

    def refused(self, window: int | None) -> None:
        """The server refused the last request as longer than its window: plan with the
        window it named, or else with three quarters of what was sent, so the next
        :meth:`prepare` compacts. The lesson is passed on (``learned``) for later turns."""
        sent = calibrated_tokens(self._estimate, self.state)
        tokens = window if window is not None else max(1_000, sent * 3 // 4)
        tokens = min(tokens, self._limits.context_window)
        self._limits = dataclasses.replace(self._limits, context_window=tokens)
        # What was sent did not fit: at least the window less the output room. A
        # calibration saying otherwise (a server that under-reports usage) is dropped.
        real = max(sent, tokens - self._limits.max_output_tokens + 1)
        if self._estimate > 0:
            self.state = dataclasses.replace(
                self.state, input_tokens=real, estimated_tokens=self._estimate
            )
        log.warning("context_window_learned", session=self.session_id, window=tokens, sent=sent)
        if self._learned is not None:
            self._learned(tokens)

    def observe(self, usage: TokenUsage) -> None:
        """Note the prompt size the provider reported for the request just sent; it is
        stored with the turn (see :attr:`unsaved`)."""
        reported = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        if reported <= 0 or self._estimate <= 0:
            return
        self.state = dataclasses.replace(
            self.state, input_tokens=reported, estimated_tokens=self._estimate
        )
        self._unsaved = True

    @property
    def unsaved(self) -> ContextState | None:
        """The state to store with the turn's messages, when it changed since saved."""
        return self.state if self._unsaved else None

    async def _compact(self, covered: Sequence[Message], cut: int, turns: int) -> ModelUsages:
        until = self._first_index + self._skip + cut
        summary, usage = "", ModelUsages()
        if self._policy.enabled and not self._summary_failed:
            summary, usage = await self._summarize(covered)
            self._summary_failed = not summary
        self._skip += cut
        if summary:
            await self._save(dataclasses.replace(self.state, summary=summary, summary_until=until))
            log.info(
                "context_compacted",
                session=self.session_id,
                summarized_turns=turns,
                summary_until=until,
                summary_chars=len(summary),
            )
            await self._emit(Info(self.session_id, "context-compacted", {"turns": turns}))
            return usage
        await self._save(dataclasses.replace(self.state, summary_until=until))
        log.warning(
            "context_dropped", session=self.session_id, dropped_turns=turns, summary_until=until
        )
        await self._emit(Info(self.session_id, "context-dropped", {"turns": turns}))
        return usage

    async def _summarize(self, covered: Sequence[Message]) -> tuple[str, ModelUsages]:
        """The model's summary of ``covered`` folded into the current one ("" when the
        call failed or said nothing), and what the call cost."""
        steps = summary_request_steps(
            model=self._limits.model,
            max_output_tokens=min(
                self._policy.summary_max_tokens, self._limits.context_window // 4
            ),
            context_window=self._limits.context_window,
            previous=self.state.summary,
            messages=covered,
        )
        request = await cooperatively(steps)
        usage = ModelUsages()
        done: Message | None = None
        try:
            async with aclosing(self._provider.stream(request)) as events:
                async for event in events:
                    if isinstance(event, ModelUsage):
                        usage = usage.add(event.model or request.model, event.usage)
                    elif isinstance(event, ModelDone):
                        done = event.message
        except ProviderError as exc:
            log.warning("context_summary_failed", session=self.session_id, reason=str(exc))
            return "", usage
        summary = done.text.strip() if done is not None else ""
        if not summary:
            log.warning("context_summary_empty", session=self.session_id)
        return summary, usage

    async def _save(self, state: ContextState) -> None:
        self.state = state
        self._unsaved = False
        try:
            await self._store.save_context(self.session_id, state)
        except Exception:  # the turn goes on; the next one measures again
            log.exception("context_save_failed", session=self.session_id)
