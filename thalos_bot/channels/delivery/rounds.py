"""The rounds of one chat's sender: the loop every transport's sender runs, one
platform call at a time.

Each round looks at the *latest* desired state of the chat's outbox
(:class:`~thalos_bot.channels.delivery.outbox.ChatOutbox`), picks one call (the typing
indicator, the next check of a send in doubt, or the next step of the current answer,
notice, tool image or question), waits until the chat's pacing and any retry-after
allow it, and makes it. New deliveries wake it while it waits, so a wait never delays
the newest text and never sends a stale one. A call that completes what the user reads
(an answer's final part, a notice) may use the chat's short burst.

After each call the marks noted are written (a new message of the bot's is kept before
the next call) and the outbox rows' journals hear how far their text got
(:class:`~thalos_bot.channels.delivery.journal.Journaling`). A failed call is classified
by the transport (:meth:`ChatRounds._classify`) and acted on by kind: retry-after blocks
the chat, a transient failure backs off, a refusal is logged.

A transport's sender subclasses :class:`ChatRounds` and makes the calls: the typing
indicator, a step of each view kind, and the probe of a send in doubt.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from time import monotonic
from typing import Generic, TypeVar

import anyio
import structlog

from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.channels.delivery.journal import Journaling
from thalos_bot.channels.delivery.outbox import ChatOutbox
from thalos_bot.channels.delivery.photo import PhotoView, SendPhoto
from thalos_bot.channels.delivery.question import (
    EditQuestion,
    OutcomeView,
    QuestionView,
    SendQuestion,
)
from thalos_bot.channels.delivery.view import (
    DEFAULT_LIMIT,
    Draft,
    Edit,
    Send,
    Step,
    StreamMode,
    View,
)
from thalos_bot.channels.pacing.backoff import Backoff
from thalos_bot.channels.pacing.gate import Call, GlobalPacer, Lane
from thalos_bot.telemetry.otel import instruments

log = structlog.get_logger(__name__)

A = TypeVar("A")
M = TypeVar("M")
T = TypeVar("T")


@dataclass(slots=True)
class Rendering:
    """Settings every chat's sender shares. ``mode`` may fall back from ``draft`` to
    ``edit`` for the whole adapter if the server turns out not to support drafts."""

    mode: StreamMode
    typing_interval: float
    backoff_initial: float
    backoff_max: float
    limit: int = DEFAULT_LIMIT
    """The transport's message limit (the splitter's)."""


class _Typing:
    """The typing indicator, as a step."""


class _Probe:
    """The next check of a send in doubt, as a step."""


TYPING = _Typing()
PROBE = _Probe()
Action = (
    tuple[View, Step]
    | tuple[PhotoView, SendPhoto]
    | tuple[QuestionView[M], SendQuestion[M]]
    | tuple[OutcomeView[M], EditQuestion]
    | _Typing
    | _Probe
)


class ChatRounds(ABC, Generic[A, M]):
    """One chat's sender loop; ``channel`` prefixes its log events and metrics."""

    in_doubt: object | None
    """A send whose outcome is being checked; nothing else is sent meanwhile."""

    def __init__(
        self,
        outbox: ChatOutbox[A, M],
        rendering: Rendering,
        pacer: GlobalPacer,
        *,
        channel: str,
    ) -> None:
        self.outbox = outbox
        self.rendering = rendering
        self.pacer = pacer
        self.backoff = Backoff(rendering.backoff_initial, rendering.backoff_max)
        self.chat = outbox.chat
        self.in_doubt = None
        self._channel = channel
        self._journal = Journaling(channel)
        self._events = {
            kind: f"{channel}_{kind}"
            for kind in ("send_recovered", "flood_wait", "call_failed", "call_refused")
        }

    # -- what the transport does -------------------------------------------------------

    @abstractmethod
    def _classify(self, exc: Exception) -> Classified | None:
        """The failure ``exc`` of a platform call means, or None: not the wire's (it
        is raised on)."""

    @abstractmethod
    async def _typing(self) -> None: ...

    @abstractmethod
    async def _probe(self) -> None: ...

    @abstractmethod
    def _recheck(self, view: View | PhotoView) -> bool:
        """Does a send (or a kept clip's upload) an earlier process left in doubt
        (``view.doubt``) need a check before anything else?"""

    @abstractmethod
    async def _photo(self, view: PhotoView) -> None: ...

    @abstractmethod
    async def _ask(self, view: QuestionView[M]) -> None: ...

    @abstractmethod
    async def _close_question(self, view: OutcomeView[M]) -> None: ...

    @abstractmethod
    async def _perform(self, view: View, step: Step) -> None: ...

    async def _after_call(self) -> None:
        """After each call, before the rows' journals hear of it (Telegram keeps the
        chat's highest message id here, before a row is confirmed)."""

    # -- the loop ----------------------------------------------------------------------

    async def run(self) -> None:
        outbox = self.outbox
        while True:
            outbox.reset_changed()
            now = monotonic()
            action, wake = self._choose(now)
            if action is None:
                outbox.idle()
                await self._sleep(wake)
                continue
            ready = max(
                outbox.gate.ready_at(_lane(action), _pacing(action)), self.pacer.blocked_until
            )
            if ready > now:
                await self._sleep(ready)
                continue
            if isinstance(action, _Typing):
                await self._typing()
                continue
            if isinstance(action, _Probe):
                await self._probe()
            elif isinstance(action[0], PhotoView):
                await self._photo(action[0])
            elif isinstance(action[0], QuestionView):
                await self._ask(action[0])
            elif isinstance(action[0], OutcomeView):
                await self._close_question(action[0])
            else:
                await self._perform(*action)
            await self._after_call()
            await self._journal.settle(self.outbox.views, self.chat)

    def _choose(self, now: float) -> tuple[Action[M] | None, float | None]:
        outbox = self.outbox
        answer = outbox.open_answer
        if answer is not None and now >= outbox.typing_at:
            return TYPING, None
        if self.in_doubt is not None:
            return PROBE, None  # before anything else: no other message while in doubt
        wakes = [outbox.typing_at] if answer is not None else []
        view = outbox.current()
        if isinstance(view, View | PhotoView) and view.doubt is not None and self._recheck(view):
            return PROBE, None
        if view is not None:
            if isinstance(view, PhotoView):
                photo = view.next_step(self.mode)
                return ((view, photo), None) if photo is not None else (None, None)
            if isinstance(view, QuestionView):
                ask = view.next_step(self.mode)
                return ((view, ask), None) if ask is not None else (None, None)
            if isinstance(view, OutcomeView):
                close = view.next_step(self.mode)
                return ((view, close), None) if close is not None else (None, None)
            step = view.next_step(self.mode, now, self.rendering.limit)
            if step is not None:
                return (view, step), None
            wake = view.wake_at(self.mode)
            if wake is not None:
                wakes.append(wake)
        return None, min(wakes, default=None)

    @property
    def mode(self) -> StreamMode:
        """The adapter's streaming mode, as this chat can have it (drafts only in
        private chats)."""
        mode = self.rendering.mode
        return "edit" if mode == "draft" and not self.outbox.private else mode

    async def _sleep(self, until: float | None) -> None:
        if until is None:
            await self.outbox.wait_changed()
            return
        with anyio.move_on_after(max(0.0, until - monotonic())):
            await self.outbox.wait_changed()

    # -- calls -------------------------------------------------------------------------

    async def _call(
        self,
        lane: Lane,
        method: str,
        call: Callable[[], Awaitable[T]],
        expected: frozenset[Failure] = frozenset({Failure.NOT_MODIFIED}),
    ) -> T | Classified:
        """Make one call; return its result, or the classified failure (logged unless it
        is one of the ``expected`` answers)."""
        await self.pacer.acquire()
        gate = self.outbox.gate
        gate.sent(lane)
        gate.calling += 1
        try:
            result = await call()
        except Exception as exc:
            failure = self._classify(exc)
            if failure is None:
                raise
            if failure.failure not in expected:
                self._note_failure(method, failure)
            return failure
        finally:
            gate.calling -= 1
        recovered = self.backoff.reset()
        if recovered:
            log.info(self._events["send_recovered"], chat=self.chat, after_failures=recovered)
        return result

    def _note_failure(self, method: str, failure: Classified) -> None:
        gate = self.outbox.gate
        kind = failure.failure
        if kind is Failure.RETRY_AFTER:
            gate.block_for(failure.retry_after or 1.0)
            if failure.everywhere:
                self.pacer.block_for(failure.retry_after or 1.0)
            instruments().waited_for_rate_limit(self._channel, failure.retry_after or 1.0)
            log.info(
                self._events["flood_wait"],
                chat=self.chat,
                method=method,
                retry_after=failure.retry_after,
            )
            return
        if kind in {Failure.NOT_SENT, Failure.MAYBE_SENT}:
            delay = self.backoff.next_delay()
            gate.block_for(delay)
            instruments().retry(self._channel, kind.value)
            log.warning(
                self._events["call_failed"],
                chat=self.chat,
                method=method,
                failure=kind.value,
                next_call_in=round(delay, 2),
                reason=failure.reason,
            )
            return
        log.warning(
            self._events["call_refused"],
            chat=self.chat,
            method=method,
            failure=kind.value,
            reason=failure.reason,
        )


def _pacing(action: Action[M]) -> Call:
    """How the call is paced (see :data:`thalos_bot.channels.pacing.gate.Call`): a call that
    completes what the user reads (a final part, a notice, a photo, a question or its
    closing edit) may use the chat's burst; a streamed edit leaves a call for it."""
    if isinstance(action, _Typing | _Probe):
        return "lead"
    step = action[1]
    if isinstance(step, Send | Edit) and not step.commit:
        return "preview" if isinstance(step, Edit) else "lead"
    return "lead" if isinstance(step, Draft) else "final"


def _lane(action: Action[M]) -> Lane:
    if isinstance(action, _Typing):
        return "action"
    if isinstance(action, _Probe):
        return "message"
    step = action[1]
    return "draft" if isinstance(step, Draft) else "message"
