"""Random conversations for the history property: what a user (and a flaky provider) can
do to a session, played against the real runtime, an official SDK, a strict fake and a
SQLite file: the Anthropic fake, or the OpenAI-compatible one in any of its dialects
(:mod:`tests.runtime.wires`).

A scenario is a list of steps (text turns, tool rounds, ``/cancel`` at a point, a
provider failure at a round, a restart from the same database, long messages near a
small context window). After every step :meth:`Player.check` asserts what the issue
promises: no request was refused, the stored history needs no repair, and a plain text
turn right after succeeds. Shared by ``tests/runtime/test_history_properties.py`` (a
modest number of examples) and ``bench/history_properties.py`` (a long run).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread
from hypothesis import strategies as st

from tests.fakes.anthropic_api import (
    AnthropicFake,
    RecordedRequest,
    TextOut,
    ToolUseOut,
    text,
    tool_use,
)
from tests.fakes.anthropic_rules import check_request
from tests.runtime.api_body import raw_body
from tests.runtime.conftest import ALICE, RecordingTools
from tests.runtime.strict import daemon
from tests.runtime.wires import AnthropicWire, FailureKind, Wire
from thalos_bot.domain.events import (
    AgentEvent,
    TextDelta,
    ToolCallFinished,
    TurnCompleted,
    TurnFailed,
)
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.messages import Message
from thalos_bot.runtime.protocol import TurnRequest
from thalos_bot.runtime.repair import repair_history
from thalos_bot.runtime.runtime import Runtime

CONTEXT_WINDOW = 2500
MAX_OUTPUT_TOKENS = 200
MAX_TOOL_ROUNDS = 3
PLAIN_ANSWER = "A plain answer."

# --- steps -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answer:
    """The model's text in one round: chunks as streamed (``()``: no text block)."""

    chunks: tuple[str, ...]

    def block(self) -> tuple[TextOut, ...]:
        return (text(*self.chunks),) if self.chunks else ()


@dataclass(frozen=True, slots=True)
class TextTurn:
    question: str
    answer: Answer


@dataclass(frozen=True, slots=True)
class ToolTurn:
    """``calls`` tool calls per round (each round may say something first), then the
    final answer. More rounds than the limit exercise the refused last round."""

    question: str
    calls: tuple[int, ...]
    said: tuple[Answer, ...]
    answer: Answer


CancelPoint = Literal["before_first_token", "mid_text", "mid_tool", "between_rounds"]


@dataclass(frozen=True, slots=True)
class CancelTurn:
    """``/cancel`` after ``rounds`` complete tool rounds, at ``point``."""

    question: str
    rounds: int
    point: CancelPoint
    partial: str


@dataclass(frozen=True, slots=True)
class FailTurn:
    """The provider fails at the request after ``rounds`` complete tool rounds."""

    question: str
    rounds: int
    kind: FailureKind
    partial: str


@dataclass(frozen=True, slots=True)
class Restart:
    """Stop the daemon and start it again on the same database."""


Step = TextTurn | ToolTurn | CancelTurn | FailTurn | Restart


# --- strategies ------------------------------------------------------------------------

_words = st.sampled_from(["hello", "what", "now", "tell me", "why", "ok", "ünïcode ✓", "42"])
_blank = st.sampled_from(["", " ", "\n", "\n\n", "\t \n"])
_chunk = st.one_of(_words, _blank, st.sampled_from(["Sure, ", " and ", "done.\n"]))


def _long(unit: str) -> st.SearchStrategy[str]:
    """About 150 to 900 tokens: a few of these fill the small context window."""
    return st.integers(min_value=50, max_value=300).map(lambda n: unit * n)


questions = st.one_of(_words, _words.map(lambda w: f"  {w}  "), _long("a long question "))
answers = st.builds(
    Answer,
    st.one_of(
        st.lists(_chunk, min_size=1, max_size=4).map(tuple),
        st.just(()),
        _long("a long answer ").map(lambda t: (t,)),
    ),
)
_rounds = st.lists(st.integers(min_value=1, max_value=3), min_size=1, max_size=4).map(tuple)

steps: st.SearchStrategy[Step] = st.one_of(
    st.builds(TextTurn, questions, answers),
    _rounds.flatmap(
        lambda calls: st.builds(
            ToolTurn,
            questions,
            st.just(calls),
            st.lists(answers, min_size=len(calls), max_size=len(calls)).map(tuple),
            answers,
        )
    ),
    st.builds(
        CancelTurn,
        questions,
        st.integers(min_value=0, max_value=2),
        st.sampled_from(["before_first_token", "mid_text", "mid_tool", "between_rounds"]),
        st.one_of(_words, _blank),
    ),
    st.builds(
        FailTurn,
        questions,
        st.integers(min_value=0, max_value=2),
        st.sampled_from(["429", "529", "500", "drop", "error_event"]),
        st.one_of(_words, _blank),
    ),
    st.just(Restart()),
)
scenarios = st.lists(steps, min_size=1, max_size=8)


# --- the player ------------------------------------------------------------------------


def _signalling(event: threading.Event, answer: Any) -> Callable[[RecordedRequest], Any]:
    def factory(request: RecordedRequest) -> Any:
        event.set()
        return answer

    return factory


@dataclass(slots=True)
class Stats:
    steps: dict[str, int] = field(default_factory=dict)
    turns: int = 0
    requests: int = 0

    def count(self, step: Step) -> None:
        name = type(step).__name__
        if isinstance(step, CancelTurn):
            name += f":{step.point}"
        elif isinstance(step, FailTurn):
            name += f":{step.kind}"
        self.steps[name] = self.steps.get(name, 0) + 1


class Player:
    """One session driven through steps; see the module docstring."""

    def __init__(self, path: Path, fake: AnthropicFake | Wire, stats: Stats | None = None) -> None:
        self.path = path
        self.wire: Wire = AnthropicWire(fake) if isinstance(fake, AnthropicFake) else fake
        self.fake = self.wire.fake
        self.stats = stats or Stats()
        self.wait_started = anyio.Event()
        self.tools = RecordingTools({"t__echo": self._echo, "t__wait": self._wait})
        self._stack = AsyncExitStack()
        self.runtime: Runtime | None = None
        self.session_id: SessionId | None = None
        self._seen_requests = len(self.wire.model_requests())

    async def _echo(self, args: Mapping[str, Any]) -> str:
        return f"echo {args.get('n', 0)}"

    async def _wait(self, args: Mapping[str, Any]) -> str:
        self.wait_started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    # -- lifecycle --

    async def start(self) -> None:
        self.runtime = await self._stack.enter_async_context(
            daemon(
                self.path,
                None,
                self.tools,
                provider=self.wire.provider(),
                context_window=CONTEXT_WINDOW,
                max_output_tokens=MAX_OUTPUT_TOKENS,
                max_tool_rounds=MAX_TOOL_ROUNDS,
            )
        )
        if self.session_id is None:
            self.session_id = (await self.runtime.create_session("helper", ALICE)).id

    async def stop(self) -> None:
        await self._stack.aclose()
        self._stack = AsyncExitStack()
        self.runtime = None

    @property
    def _runtime(self) -> Runtime:
        assert self.runtime is not None, "start() first"
        return self.runtime

    # -- steps --

    async def play(self, step: Step) -> None:
        self.stats.count(step)
        if isinstance(step, Restart):
            await self.stop()
            await self.start()
        elif isinstance(step, TextTurn):
            self.fake.enqueue(self.wire.reply(*step.answer.block()))
            await self._turn(step.question)
        elif isinstance(step, ToolTurn):
            for calls, said in zip(step.calls, step.said, strict=True):
                self.fake.enqueue(self.wire.reply(*said.block(), *self._calls(calls)))
            self.fake.enqueue(self.wire.reply(*step.answer.block()))
            await self._turn(step.question)
        elif isinstance(step, FailTurn):
            self._tool_rounds(step.rounds)
            self.fake.enqueue(self.wire.failure(step.kind, step.partial))
            await self._turn(step.question)
        else:
            await self._cancelled(step)
        self.fake.discard_pending()
        await self.check()

    def _calls(self, count: int, *, blocking: bool = False) -> list[ToolUseOut]:
        calls = [tool_use("t__echo", {"n": n}) for n in range(count)]
        if blocking:
            calls[-1] = tool_use("t__wait", {})
        return calls

    def _tool_rounds(self, rounds: int) -> None:
        for n in range(rounds):
            self.fake.enqueue(self.wire.reply(*self._calls(n % 2 + 1)))

    async def _turn(self, question: str) -> TurnCompleted | TurnFailed:
        assert self.session_id is not None
        self.stats.turns += 1
        result = await self._runtime.run_turn(TurnRequest(self.session_id, ALICE, question))
        return result.terminal

    async def _cancelled(self, step: CancelTurn) -> None:
        """Play a turn and cancel it when ``step.point`` is reached."""
        assert self.session_id is not None
        arrived = threading.Event()
        self.wait_started = anyio.Event()
        rounds = step.rounds
        if step.point == "between_rounds":
            rounds = max(1, rounds)
        if step.point == "mid_tool":
            self._tool_rounds(rounds)
            self.fake.enqueue(self.wire.reply(*self._calls(2, blocking=True)))
        elif step.point == "between_rounds":
            self._tool_rounds(rounds)
            self.fake.enqueue(_signalling(arrived, self.wire.hang(step.partial)))
        else:
            self._tool_rounds(rounds)
            partial = "" if step.point == "before_first_token" else step.partial
            self.fake.enqueue(_signalling(arrived, self.wire.hang(partial)))
        calls_before = sum(n % 2 + 1 for n in range(rounds))
        runtime, session_id = self._runtime, self.session_id
        self.stats.turns += 1
        request = TurnRequest(session_id, ALICE, step.question)

        async def cancel() -> None:
            await runtime.cancel(session_id, ALICE)

        async with anyio.create_task_group() as group:
            if step.point == "mid_tool":

                async def on_tool() -> None:
                    await self.wait_started.wait()
                    await cancel()

                group.start_soon(on_tool)
            elif step.point == "before_first_token" or (
                step.point == "mid_text" and not step.partial
            ):

                async def on_request() -> None:
                    await anyio.to_thread.run_sync(arrived.wait, abandon_on_cancel=True)
                    await cancel()

                group.start_soon(on_request)
            events = runtime.run_turn_streaming(request)
            await self._consume(events, step, calls_before, cancel)
            group.cancel_scope.cancel()

    async def _consume(
        self,
        events: AsyncIterator[AgentEvent],
        step: CancelTurn,
        calls_before: int,
        cancel: Callable[[], Awaitable[None]],
    ) -> None:
        finished = 0
        async for event in events:
            if isinstance(event, ToolCallFinished):
                finished += 1
                if step.point == "between_rounds" and finished == calls_before:
                    await cancel()
            elif (
                isinstance(event, TextDelta)
                and step.point == "mid_text"
                and step.partial
                and finished == calls_before
            ):
                await cancel()

    # -- the property --

    async def check(self) -> None:
        """No request so far was refused, the stored history needs no repair, and a
        plain text turn succeeds."""
        self._no_refusals()
        assert self.session_id is not None
        history = await self._runtime.store.history(self.session_id)
        assert_needs_no_repair(history)
        self.fake.enqueue(self.wire.reply(text(PLAIN_ANSWER)))
        terminal = await self._turn("a plain question")
        self._no_refusals()
        assert isinstance(terminal, TurnCompleted), f"the plain turn failed: {terminal}"
        assert terminal.text == PLAIN_ANSWER
        self.fake.discard_pending()

    def _no_refusals(self) -> None:
        requests = self.wire.model_requests()
        fresh = requests[self._seen_requests :]
        self._seen_requests = len(requests)
        self.stats.requests += len(fresh)
        problems = [
            f"request #{n}: {p}"
            for n, r in enumerate(fresh)
            if (p := self.wire.problem(r.body)) is not None
        ]
        assert not problems, "the real API would refuse: " + "; ".join(problems)
        assert not self.fake.refusals, self.fake.refusals


def assert_needs_no_repair(history: Sequence[Message]) -> None:
    """What the runtime stores is valid as it is (the repair is for older versions)."""
    if not history:
        return
    repaired = repair_history(history)
    assert not repaired.changed, f"stored history needed {dict(repaired.fixes)}: {history}"
    problem = check_request(raw_body([*history, Message.user("next")]))
    assert problem is None, problem


@asynccontextmanager
async def playing(
    path: Path, fake: AnthropicFake | Wire, stats: Stats | None = None
) -> AsyncIterator[Player]:
    player = Player(path, fake, stats)
    await player.start()
    try:
        yield player
    finally:
        await player.stop()
