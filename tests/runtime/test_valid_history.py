"""Paths that used to leave a session refused by the real API on every later turn.

Each test runs the real runtime over the official SDK, the strict Anthropic fake and a
SQLite file: a request the real API would refuse fails the test (the fake says why).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.fakes.anthropic_api import (
    AnthropicFake,
    api_error,
    hang_mid_stream,
    reply,
    text_reply,
    tool_use,
    tool_use_reply,
)
from tests.runtime.conftest import ALICE, RecordingTools
from tests.runtime.strict import daemon
from thalos_bot.domain.errors import ErrorCode
from thalos_bot.domain.events import TextDelta, TurnCompleted, TurnFailed
from thalos_bot.domain.messages import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    append_message,
)
from thalos_bot.runtime.compaction import choose_cut, measure
from thalos_bot.runtime.protocol import TurnRequest
from thalos_bot.runtime.runtime import Runtime

pytestmark = pytest.mark.anyio


async def ask(runtime: Runtime, session_id: Any, text: str) -> TurnCompleted | TurnFailed:
    result = await runtime.run_turn(TurnRequest(session_id, ALICE, text))
    return result.terminal


async def stored(runtime: Runtime, session_id: Any) -> list[Message]:
    return await runtime.store.history(session_id)


def no_blank_or_empty(history: list[Message]) -> bool:
    return all(
        m.content and all(b.text.strip() for b in m.content if isinstance(b, TextBlock))
        for m in history
    )


async def test_a_whitespace_only_answer_is_not_kept_and_the_next_turn_is_accepted(
    tmp_path: Path,
) -> None:
    with AnthropicFake() as fake:
        fake.enqueue(text_reply("\n", "\n"), text_reply("Here I am."))
        async with daemon(tmp_path / "t.db", fake) as runtime:
            session = await runtime.create_session("helper", ALICE)
            first = await ask(runtime, session.id, "hello?")
            second = await ask(runtime, session.id, "are you there?")
            history = await stored(runtime, session.id)
    assert isinstance(first, TurnCompleted)
    assert isinstance(second, TurnCompleted), second
    assert second.text == "Here I am."
    assert no_blank_or_empty(history), history


async def test_cancel_when_only_whitespace_has_streamed(tmp_path: Path) -> None:
    with AnthropicFake() as fake:
        fake.enqueue(hang_mid_stream(after_text="\n\n"), text_reply("Fresh start."))
        async with daemon(tmp_path / "t.db", fake) as runtime:
            session = await runtime.create_session("helper", ALICE)
            request = TurnRequest(session.id, ALICE, "write me a poem")
            async for event in runtime.run_turn_streaming(request):
                if isinstance(event, TextDelta):
                    assert await runtime.cancel(session.id, ALICE)
                if isinstance(event, TurnFailed):
                    assert event.error.code is ErrorCode.CANCELLED
            follow_up = await ask(runtime, session.id, "never mind, hi")
            history = await stored(runtime, session.id)
    assert isinstance(follow_up, TurnCompleted), follow_up
    assert no_blank_or_empty(history), history


async def test_a_tool_round_then_no_text_stores_no_empty_message(tmp_path: Path) -> None:
    async def lookup(args: Mapping[str, Any]) -> str:
        return "42"

    tools = RecordingTools({"kb__lookup": lookup})
    with AnthropicFake() as fake:
        fake.enqueue(
            tool_use_reply("kb__lookup", {"q": "answer"}, id="toolu_a"),
            reply(),  # end_turn with no content at all
            text_reply("It is 42."),
        )
        async with daemon(tmp_path / "t.db", fake, tools) as runtime:
            session = await runtime.create_session("helper", ALICE)
            silent = await ask(runtime, session.id, "look it up")
            history = await stored(runtime, session.id)
            again = await ask(runtime, session.id, "so?")
    assert isinstance(silent, TurnCompleted)
    assert silent.text == ""
    assert Message("assistant", ()) not in history
    assert no_blank_or_empty(history), history
    assert isinstance(again, TurnCompleted), again


async def test_after_a_failed_tool_round_trimming_never_orphans_a_tool_result(
    tmp_path: Path,
) -> None:
    """Round 2 fails, so the turn ends on a tool_result; the next words are merged into
    that message. With the context nearly full, trimming must not cut right there."""

    async def lookup(args: Mapping[str, Any]) -> str:
        return "found it"

    tools = RecordingTools({"kb__lookup": lookup})
    long_question = "please remember all of this: " + "lorem ipsum " * 800
    with AnthropicFake() as fake:
        fake.enqueue(
            tool_use_reply("kb__lookup", {"q": "x"}, id="toolu_b"),
            api_error(500, "api_error"),
            text_reply("Short answer."),
            text_reply("Still here."),
        )
        async with daemon(
            tmp_path / "t.db", fake, tools, context_window=2000, max_output_tokens=200
        ) as runtime:
            session = await runtime.create_session("helper", ALICE)
            failed = await ask(runtime, session.id, long_question)
            merged = await ask(runtime, session.id, "what did you find?")
            trimmed = await ask(runtime, session.id, "and now?")
        sent = fake.requests[-1].body["messages"]
    assert isinstance(failed, TurnFailed)
    assert failed.error.code is ErrorCode.PROVIDER_ERROR
    assert isinstance(merged, TurnCompleted), merged
    assert isinstance(trimmed, TurnCompleted), trimmed
    first = sent[0]["content"]
    assert first[0]["type"] == "text", "the trimmed request starts with the user's words"


def test_user_words_after_tool_results_do_not_start_a_turn() -> None:
    results = Message("user", (ToolResultBlock("toolu_1", "done"),))
    merged = append_message([results], Message.user("next question"))[0]
    assert merged.text == "next question"
    assert not merged.starts_turn
    assert Message.user("a fresh question").starts_turn


def test_trimming_cuts_only_where_a_turn_really_starts() -> None:
    history = [
        Message.user("q1 " + "x" * 4000),
        Message("assistant", (ToolUseBlock("toolu_1", "kb__lookup", {}),)),
        Message("user", (ToolResultBlock("toolu_1", "r"), TextBlock("q2"))),
        Message("assistant", (TextBlock("a2"),)),
        Message.user("q3"),
    ]
    sizes = measure(history)
    assert sizes.starts == [0, 4], "the user's words merged into tool results start nothing"
    for room in (0, 10, 100, 10_000):
        cut = choose_cut(sizes, keep_recent_turns=1, room_chars=room)
        assert cut == 4, "a cut never lands between a tool call and its result"


async def test_an_interrupted_tool_round_answers_every_call(tmp_path: Path) -> None:
    slow_started = anyio.Event()

    async def quick(args: Mapping[str, Any]) -> str:
        return "quick"

    async def slow(args: Mapping[str, Any]) -> str:
        slow_started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    tools = RecordingTools({"t__quick": quick, "t__slow": slow})
    with AnthropicFake() as fake:
        fake.enqueue(
            reply(tool_use("t__quick", {}, id="toolu_q"), tool_use("t__slow", {}, id="toolu_s")),
            text_reply("Next answer."),
        )
        async with daemon(tmp_path / "t.db", fake, tools) as runtime:
            session = await runtime.create_session("helper", ALICE)
            async with anyio.create_task_group() as group:

                async def cancel_when_running() -> None:
                    await slow_started.wait()
                    await runtime.cancel(session.id, ALICE)

                group.start_soon(cancel_when_running)
                cancelled = await ask(runtime, session.id, "do both")
            history = await stored(runtime, session.id)
            follow_up = await ask(runtime, session.id, "and?")
    assert isinstance(cancelled, TurnFailed)
    assert cancelled.error.code is ErrorCode.CANCELLED
    uses = [b.id for m in history for b in m.content if isinstance(b, ToolUseBlock)]
    results = [b.tool_use_id for m in history for b in m.content if isinstance(b, ToolResultBlock)]
    assert uses == results == ["toolu_q", "toolu_s"]
    assert isinstance(follow_up, TurnCompleted), follow_up
