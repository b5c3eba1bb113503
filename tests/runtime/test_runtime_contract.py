"""The runtime contract, run against both session stores."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from tests.runtime.conftest import ALICE, MALLORY, RecordingTools, RuntimeFactory, make_catalog
from thalos_bot.domain.errors import AgentError, ErrorCode
from thalos_bot.domain.events import (
    AgentEvent,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnCompleted,
    TurnFailed,
    is_terminal,
)
from thalos_bot.domain.ids import ChannelId, ConversationId, SessionId
from thalos_bot.domain.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from thalos_bot.providers.scripted import Await, CallTool, Fail, Hang, Say, ScriptedProvider
from thalos_bot.runtime.compaction import CompactionPolicy
from thalos_bot.runtime.protocol import TurnRequest
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.storage.database import Database
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.storage.protocol import LoadedHistory, OutboxAddress, OutboxEntry
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.tools.types import ToolResult

pytestmark = pytest.mark.anyio


def turn(session_id: SessionId, text: str = "hello", caller: Any = ALICE) -> TurnRequest:
    return TurnRequest(session_id, caller, text)


async def collect(runtime: Runtime, request: TurnRequest) -> list[AgentEvent]:
    return [event async for event in runtime.run_turn_streaming(request)]


def assert_one_terminal(events: list[AgentEvent]) -> AgentEvent:
    terminals = [e for e in events if is_terminal(e)]
    assert len(terminals) == 1, events
    assert events[-1] is terminals[0]
    return terminals[0]


def assert_valid_history(messages: list[Message]) -> None:
    """Roles alternate, the history starts with the user, every tool_use has a result."""
    assert messages[0].role == "user"
    for previous, current in itertools.pairwise(messages):
        assert previous.role != current.role, messages
    for index, message in enumerate(messages):
        uses = {b.id for b in message.content if isinstance(b, ToolUseBlock)}
        if uses:
            following = messages[index + 1].content
            results = {b.tool_use_id for b in following if isinstance(b, ToolResultBlock)}
            assert uses <= results, f"dangling tool_use in {messages}"


async def test_text_turn_streams_and_completes(make_runtime: RuntimeFactory) -> None:
    provider = ScriptedProvider([[Say("Hel", "lo ", "there")]])
    async with make_runtime(provider) as runtime:
        session = await runtime.create_session("helper", ALICE)
        events = await collect(runtime, turn(session.id))
    terminal = assert_one_terminal(events)
    assert isinstance(terminal, TurnCompleted)
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert deltas == ["Hel", "lo ", "there"]
    assert terminal.text == "Hello there"
    assert terminal.usage.output_tokens > 0
    assert provider.requests[0].model == "m-default"
    assert provider.requests[0].system[0].text == "You help."


async def test_buffered_run_turn_and_agent_model(make_runtime: RuntimeFactory) -> None:
    provider = ScriptedProvider([[Say("done")]])
    async with make_runtime(provider) as runtime:
        session = await runtime.create_session("coder", ALICE)
        result = await runtime.run_turn(turn(session.id))
        info = await runtime.session_info(session.id)
    assert result.ok
    assert result.text == "done"
    assert provider.requests[0].model == "m-coder"
    assert info is not None
    assert info.turns == 1
    assert info.usage.total > 0
    assert not info.busy


async def test_provider_failure_ends_in_one_turn_failed(make_runtime: RuntimeFactory) -> None:
    provider = ScriptedProvider([[Say("half an"), Fail("upstream exploded: secret-detail")]])
    async with make_runtime(provider) as runtime:
        session = await runtime.create_session("helper", ALICE)
        events = await collect(runtime, turn(session.id))
        follow_up = await runtime.run_turn(turn(session.id, "again"))
    terminal = assert_one_terminal(events)
    assert isinstance(terminal, TurnFailed)
    assert terminal.error.code is ErrorCode.PROVIDER_ERROR
    assert terminal.partial_text == "half an"
    assert follow_up.ok
    assert_valid_history(list(provider.requests[1].messages))


async def test_an_exception_inside_our_code_is_a_turn_failed(
    make_runtime: RuntimeFactory,
) -> None:
    class BrokenContributor:
        async def contribute(self, *args: object) -> Any:
            raise RuntimeError("contributor bug")

    provider = ScriptedProvider([[Say("fine")]])
    async with make_runtime(provider) as runtime:
        runtime.contributors.append(BrokenContributor())
        session = await runtime.create_session("helper", ALICE)
        ok = await runtime.run_turn(turn(session.id))

        async def broken_history(session_id: SessionId, **_: object) -> LoadedHistory:
            raise RuntimeError("SELECT * FROM secrets -- raw sql text")

        runtime.store.load_context = broken_history  # type: ignore[method-assign]
        with capture_logs() as logs:
            events = await collect(runtime, turn(session.id))
    assert ok.ok, "a failing prompt contributor must not fail the turn"
    terminal = assert_one_terminal(events)
    assert isinstance(terminal, TurnFailed)
    assert terminal.error.code is ErrorCode.INTERNAL_ERROR
    assert "SELECT" not in terminal.error.detail
    assert any(entry["event"] == "turn_crashed" for entry in logs)
    assert not runtime.is_busy(session.id)


async def test_tool_round_trip(make_runtime: RuntimeFactory) -> None:
    async def add(args: Mapping[str, Any]) -> str:
        return str(args["a"] + args["b"])

    tools = RecordingTools({"calc__add": add})
    provider = ScriptedProvider(
        [[Say("Let me add."), CallTool("calc__add", {"a": 2, "b": 3})], [Say("It is 5.")]]
    )
    async with make_runtime(provider, tools) as runtime:
        session = await runtime.create_session("helper", ALICE)
        events = await collect(runtime, turn(session.id, "2+3?"))
    terminal = assert_one_terminal(events)
    assert isinstance(terminal, TurnCompleted)
    assert terminal.text == "Let me add.\n\nIt is 5."
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == terminal.text
    kinds = [e.kind for e in events if isinstance(e, ToolCallStarted | ToolCallFinished)]
    assert kinds == ["tool_call_started", "tool_call_finished"]
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert finished.outcome == "ok"
    assert finished.arguments == '{"a":2,"b":3}'
    assert [c.name for c in terminal.tool_calls] == ["calc__add"]
    second = provider.requests[1].messages
    result_block = second[-1].content[0]
    assert isinstance(result_block, ToolResultBlock)
    assert result_block.content == "5"
    assert_valid_history(list(second))


async def test_tool_errors_and_crashes_become_results(make_runtime: RuntimeFactory) -> None:
    async def failing(args: Mapping[str, Any]) -> ToolResult:
        return ToolResult("no such file", "error")

    async def crashing(args: Mapping[str, Any]) -> str:
        raise RuntimeError("tool bug with /etc/passwd")

    tools = RecordingTools({"fs__read": failing, "fs__boom": crashing})
    provider = ScriptedProvider(
        [[CallTool("fs__read", {"path": "x"}), CallTool("fs__boom")], [Say("Sorry.")]]
    )
    async with make_runtime(provider, tools) as runtime:
        session = await runtime.create_session("helper", ALICE)
        result = await runtime.run_turn(turn(session.id))
    assert result.ok
    outcomes = {e.name: e.outcome for e in result.events if isinstance(e, ToolCallFinished)}
    assert outcomes == {"fs__read": "error", "fs__boom": "error"}
    results = provider.requests[1].messages[-1].content
    assert all(isinstance(b, ToolResultBlock) and b.is_error for b in results)
    assert "/etc/passwd" not in str(results)


async def test_parallel_tool_calls_respect_the_limit(make_runtime: RuntimeFactory) -> None:
    running = 0
    peak = 0
    release = anyio.Event()

    async def slow(args: Mapping[str, Any]) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if peak >= 2:
            release.set()
        await release.wait()
        running -= 1
        return "ok"

    tools = RecordingTools({"t__slow": slow})
    calls = [CallTool("t__slow", {"n": n}) for n in range(5)]
    provider = ScriptedProvider([calls, [Say("all done")]])
    async with make_runtime(provider, tools, max_parallel_tools=2) as runtime:
        session = await runtime.create_session("helper", ALICE)
        with anyio.fail_after(5):
            result = await runtime.run_turn(turn(session.id))
    assert result.ok
    assert peak == 2
    assert len(tools.calls) == 5


async def test_tool_round_limit(make_runtime: RuntimeFactory) -> None:
    async def noop(args: Mapping[str, Any]) -> str:
        return "again"

    tools = RecordingTools({"t__loop": noop})
    provider = ScriptedProvider(
        [[CallTool("t__loop")], [CallTool("t__loop")], [CallTool("t__loop")]]
    )
    async with make_runtime(provider, tools, max_tool_rounds=3) as runtime:
        session = await runtime.create_session("helper", ALICE)
        result = await runtime.run_turn(turn(session.id))
        follow_up = await runtime.run_turn(turn(session.id, "next"))
    assert result.ok
    assert [r.allow_tools for r in provider.requests[:3]] == [True, True, False]
    assert len(tools.calls) == 2, "the call made on the final round is refused, not run"
    assert [c.outcome for c in result.terminal.tool_calls] == ["ok", "ok", "refused"]
    assert follow_up.ok
    assert_valid_history(list(provider.requests[3].messages))


async def test_busy_is_refused_immediately_and_the_first_turn_is_unaffected(
    make_runtime: RuntimeFactory,
) -> None:
    gate = anyio.Event()
    provider = ScriptedProvider([[Say("first "), Await(gate.wait), Say("answer")]])
    first_events: list[AgentEvent] = []
    async with make_runtime(provider) as runtime:
        session = await runtime.create_session("helper", ALICE)
        async with anyio.create_task_group() as group:

            async def first() -> None:
                first_events.extend(await collect(runtime, turn(session.id)))

            group.start_soon(first)
            while not runtime.is_busy(session.id):
                await anyio.sleep(0)
            with anyio.fail_after(1):
                refused = await runtime.run_turn(turn(session.id, "second"))
            assert runtime.is_busy(session.id)
            gate.set()
    assert isinstance(refused.terminal, TurnFailed)
    assert refused.terminal.error.code is ErrorCode.SESSION_BUSY
    terminal = assert_one_terminal(first_events)
    assert isinstance(terminal, TurnCompleted)
    assert terminal.text == "first answer"
    assert len(provider.requests) == 1, "the busy turn never reached the model"


async def test_closed_and_owner_refusals(make_runtime: RuntimeFactory) -> None:
    provider = ScriptedProvider([[Say("one")]])
    async with make_runtime(provider) as runtime:
        session = await runtime.create_session("helper", ALICE)
        stranger = await runtime.run_turn(turn(session.id, caller=MALLORY))
        with pytest.raises(AgentError) as not_owner:
            await runtime.close_session(session.id, MALLORY)
        with pytest.raises(AgentError) as cancel_not_owner:
            await runtime.cancel(session.id, MALLORY)
        await runtime.close_session(session.id, ALICE)
        with pytest.raises(AgentError) as closed_twice:
            await runtime.close_session(session.id, ALICE)
        after_close = await runtime.run_turn(turn(session.id))
        missing = await runtime.run_turn(turn(SessionId("s_nope")))
        with pytest.raises(AgentError) as unknown_agent:
            await runtime.create_session("nobody", ALICE)
    assert isinstance(stranger.terminal, TurnFailed)
    assert stranger.terminal.error.code is ErrorCode.PERMISSION_DENIED
    assert not_owner.value.code is ErrorCode.PERMISSION_DENIED
    assert cancel_not_owner.value.code is ErrorCode.PERMISSION_DENIED
    assert closed_twice.value.code is ErrorCode.SESSION_CLOSED
    assert isinstance(after_close.terminal, TurnFailed)
    assert after_close.terminal.error.code is ErrorCode.SESSION_CLOSED
    assert isinstance(missing.terminal, TurnFailed)
    assert missing.terminal.error.code is ErrorCode.SESSION_NOT_FOUND
    assert unknown_agent.value.code is ErrorCode.AGENT_NOT_FOUND
    assert provider.requests == []


async def test_close_while_busy_is_refused(make_runtime: RuntimeFactory) -> None:
    provider = ScriptedProvider([[Say("thinking"), Hang()]])
    async with make_runtime(provider) as runtime:
        session = await runtime.create_session("helper", ALICE)
        async with anyio.create_task_group() as group:
            group.start_soon(collect, runtime, turn(session.id))
            while not runtime.is_busy(session.id):
                await anyio.sleep(0)
            with pytest.raises(AgentError) as busy:
                await runtime.close_session(session.id, ALICE)
            assert await runtime.cancel(session.id, ALICE)
        await runtime.close_session(session.id, ALICE)
    assert busy.value.code is ErrorCode.SESSION_BUSY


async def test_cancel_mid_stream(make_runtime: RuntimeFactory) -> None:
    provider = ScriptedProvider([[Say("partial ", "answer"), Hang()], [Say("fresh")]])
    events: list[AgentEvent] = []
    got_text = anyio.Event()
    async with make_runtime(provider) as runtime:
        session = await runtime.create_session("helper", ALICE)

        async def consume() -> None:
            async for event in runtime.run_turn_streaming(turn(session.id, "tell me")):
                events.append(event)
                if isinstance(event, TextDelta) and event.text == "answer":
                    got_text.set()

        # The provider hangs for ever after "answer": the turn ending at all (well within
        # the safety bound) shows the cancel did not wait for the stream.
        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(consume)
                await got_text.wait()
                assert await runtime.cancel(session.id, ALICE)
        assert not runtime.is_busy(session.id)
        nothing_running = await runtime.cancel(session.id, ALICE)
        follow_up = await runtime.run_turn(turn(session.id, "next"))
    terminal = assert_one_terminal(events)
    assert isinstance(terminal, TurnFailed)
    assert terminal.error.code is ErrorCode.CANCELLED
    assert terminal.partial_text == "partial answer"
    assert nothing_running is False
    assert follow_up.ok
    history = list(provider.requests[1].messages)
    assert_valid_history(history)
    assert history[1] == Message("assistant", (TextBlock("partial answer"),))


async def test_cancel_mid_tool(make_runtime: RuntimeFactory) -> None:
    async def forever(args: Mapping[str, Any]) -> str:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def quick(args: Mapping[str, Any]) -> str:
        return "quick result"

    tools = RecordingTools({"t__forever": forever, "t__quick": quick})
    provider = ScriptedProvider(
        [[Say("Working."), CallTool("t__quick"), CallTool("t__forever")], [Say("next answer")]]
    )
    async with make_runtime(provider, tools) as runtime:
        session = await runtime.create_session("helper", ALICE)
        events: list[AgentEvent] = []

        async def consume() -> None:
            events.extend(await collect(runtime, turn(session.id)))

        async with anyio.create_task_group() as group:
            group.start_soon(consume)
            await tools.started.wait()
            while len(tools.calls) < 2:
                await anyio.sleep(0)
            with anyio.fail_after(1):
                await runtime.cancel(session.id, ALICE)
                while runtime.is_busy(session.id):
                    await anyio.sleep(0.01)
        follow_up = await runtime.run_turn(turn(session.id, "and now?"))
    terminal = assert_one_terminal(events)
    assert isinstance(terminal, TurnFailed)
    assert terminal.error.code is ErrorCode.CANCELLED
    assert follow_up.ok
    history = list(provider.requests[1].messages)
    assert_valid_history(history)
    results = {b.tool_use_id: b for b in history[2].content if isinstance(b, ToolResultBlock)}
    assert len(results) == 2
    contents = sorted(b.content for b in results.values())
    assert contents[0] == "This tool call did not finish: the turn was stopped."
    assert contents[1] == "quick result"


async def test_leaving_the_stream_early_cancels_the_turn(make_runtime: RuntimeFactory) -> None:
    provider = ScriptedProvider([[Say("a", "b"), Hang()], [Say("after")]])
    async with make_runtime(provider) as runtime:
        session = await runtime.create_session("helper", ALICE)
        stream = runtime.run_turn_streaming(turn(session.id))
        async for _event in stream:
            break
        await stream.aclose()  # type: ignore[attr-defined]
        with anyio.fail_after(1):
            while runtime.is_busy(session.id):
                await anyio.sleep(0.01)
        follow_up = await runtime.run_turn(turn(session.id, "still there?"))
    assert follow_up.ok


async def test_different_sessions_run_concurrently(make_runtime: RuntimeFactory) -> None:
    arrived = 0
    both_inside = anyio.Event()

    async def arrive() -> None:
        nonlocal arrived
        arrived += 1
        if arrived == 2:
            both_inside.set()
        await both_inside.wait()

    provider = ScriptedProvider([[Await(arrive), Say("one")], [Await(arrive), Say("two")]])
    results = []
    async with make_runtime(provider) as runtime:
        first = await runtime.create_session("helper", ALICE)
        second = await runtime.create_session("helper", ALICE)

        async def run(session_id: SessionId) -> None:
            results.append(await runtime.run_turn(turn(session_id)))

        # Each turn waits inside its model call until the other one is inside too:
        # this only finishes if the two turns really run at the same time.
        with anyio.fail_after(2):
            async with anyio.create_task_group() as group:
                group.start_soon(run, first.id)
                group.start_soon(run, second.id)
    assert sorted(r.text for r in results) == ["one", "two"]


async def test_without_compaction_the_oldest_turns_are_dropped(
    make_runtime: RuntimeFactory,
) -> None:
    long_answer = "x" * 4000  # about 1,000 tokens per answer
    provider = ScriptedProvider([[Say(long_answer)] for _ in range(6)])
    policy = CompactionPolicy(enabled=False)
    async with make_runtime(
        provider, context_window=3000, max_output_tokens=500, compaction=policy
    ) as runtime:
        session = await runtime.create_session("helper", ALICE)
        with capture_logs() as logs:
            results = [
                await runtime.run_turn(turn(session.id, f"question {index}")) for index in range(6)
            ]
    assert all(result.ok for result in results)
    assert len(provider.requests) == 6, "no summary was asked for"
    sent = list(provider.requests[-1].messages)
    assert_valid_history(sent)
    assert sent[0].text.startswith("question "), "the history still starts with a user turn"
    assert sent[-1].text == "question 5", "the current turn is always kept"
    assert len(sent) < 11, "older turns were dropped"
    dropped = [entry for entry in logs if entry["event"] == "context_dropped"]
    assert dropped
    assert all(entry["dropped_turns"] >= 1 for entry in dropped)
    told = [
        any(e.kind == "info" and e.name == "context-dropped" for e in r.events) for r in results
    ]
    assert sum(told) == len(dropped), "each drop is told once"
    assert not any(a and b for a, b in itertools.pairwise(told)), "a drop is remembered"
    info = await runtime.session_info(session.id)
    assert info is not None
    assert info.turns == 6, "the stored history keeps every turn"


async def test_a_session_resumes_after_the_database_is_reopened(tmp_path: Path) -> None:
    path = tmp_path / "resume.db"
    provider = ScriptedProvider([[Say("Nice to meet you, Ada.")], [Say("You are Ada.")]])

    async def runtime_on(db: Database) -> Runtime:
        return Runtime(
            catalog=make_catalog(),
            store=SqliteSessionStore(db),
            provider=provider,
            settings=RuntimeSettings(model="m"),
        )

    db = await Database.open(path)
    async with await runtime_on(db) as runtime:
        session = await runtime.create_session("helper", ALICE)
        assert (await runtime.run_turn(turn(session.id, "I am Ada."))).ok
    await db.aclose()

    reopened = await Database.open(path)
    try:
        async with await runtime_on(reopened) as runtime:
            info = await runtime.session_info(session.id)
            again = await runtime.run_turn(turn(session.id, "Who am I?"))
    finally:
        await reopened.aclose()
    assert info is not None
    assert info.turns == 1
    assert again.ok
    assert [(m.role, m.text) for m in provider.requests[1].messages] == [
        ("user", "I am Ada."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "Who am I?"),
    ]


async def test_a_store_failure_on_admission_is_a_turn_failed(make_runtime: RuntimeFactory) -> None:
    provider = ScriptedProvider()
    async with make_runtime(provider) as runtime:
        session = await runtime.create_session("helper", ALICE)

        async def broken_get(session_id: SessionId) -> Any:
            raise RuntimeError("database is locked")

        runtime.store.get = broken_get  # type: ignore[method-assign]
        events = await collect(runtime, turn(session.id))
    terminal = assert_one_terminal(events)
    assert isinstance(terminal, TurnFailed)
    assert terminal.error.code is ErrorCode.INTERNAL_ERROR
    assert "locked" not in terminal.error.detail
    assert provider.requests == []


async def test_an_unsaved_turn_is_not_reported_as_completed(make_runtime: RuntimeFactory) -> None:
    provider = ScriptedProvider([[Say("the answer")]])
    async with make_runtime(provider) as runtime:
        session = await runtime.create_session("helper", ALICE)

        async def broken_commit(*args: object) -> None:
            raise OSError("disk full")

        runtime.store.commit_turn = broken_commit  # type: ignore[method-assign,assignment]
        events = await collect(runtime, turn(session.id))
        busy_after = runtime.is_busy(session.id)
    terminal = assert_one_terminal(events)
    assert isinstance(terminal, TurnFailed)
    assert terminal.error.code is ErrorCode.INTERNAL_ERROR
    assert terminal.partial_text == "the answer", "what the user saw stays visible"
    assert not busy_after


async def test_a_completed_turn_writes_its_final_to_the_outbox_with_the_turn() -> None:
    store = MemorySessionStore()
    address = OutboxAddress(ChannelId("telegram"), ConversationId("42"), "out-1")
    provider = ScriptedProvider([[Say("Hello there")], [Say("   ")], [Fail("boom")]])
    async with Runtime(
        catalog=make_catalog(), store=store, provider=provider, settings=RuntimeSettings("m")
    ) as runtime:
        session = await runtime.create_session("helper", ALICE)
        for _ in range(3):  # answered; answered with nothing; failed
            request = TurnRequest(session.id, ALICE, "hello", deliver_to=address)
            await runtime.run_turn(request)
        await runtime.run_turn(turn(session.id))  # nowhere to deliver
    assert store.outbox == [OutboxEntry(address, "Hello there")]
