"""The pure parts of compaction: turn starts, masking, the cut, the summary's shape."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import pytest

from tests.runtime.conftest import ALICE, RecordingTools, RuntimeFactory
from tests.runtime.test_runtime_contract import assert_valid_history
from thalos_bot.domain.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from thalos_bot.providers.base import ModelRequest
from thalos_bot.providers.scripted import CallTool, Reply, Say, ScriptedProvider
from thalos_bot.runtime.compaction import (
    SUMMARY_INSTRUCTIONS,
    SUMMARY_PREFIX,
    choose_cut,
    is_turn_start,
    mask_tool_results,
    measure,
    summary_request,
    transcript,
    with_summary,
)
from thalos_bot.runtime.protocol import TurnRequest


def user(text: str) -> Message:
    return Message.user(text)


def assistant(text: str) -> Message:
    return Message("assistant", (TextBlock(text),))


def tool_round(call_id: str, name: str, output: str) -> list[Message]:
    return [
        Message("assistant", (ToolUseBlock(call_id, name, {"q": call_id}),)),
        Message("user", (ToolResultBlock(call_id, output),)),
    ]


def test_only_the_persons_words_without_tool_results_start_a_turn() -> None:
    assert is_turn_start(user("hi"))
    assert not is_turn_start(assistant("hi"))
    assert not is_turn_start(Message("user", (TextBlock("  \n"),)))
    merged = Message("user", (ToolResultBlock("t1", "out"), TextBlock("and now?")))
    assert not is_turn_start(merged), "text merged into a tool-result message is no cut point"


def test_the_cut_keeps_recent_turns_and_never_separates_a_call_from_its_result() -> None:
    history = [
        user("q0"),
        *tool_round("t0", "web__get", "a" * 500),
        assistant("a0"),
        user("q1"),
        *tool_round("t1", "web__get", "b" * 500),
        Message("user", (ToolResultBlock("t9", "late"), TextBlock("q2 merged"))),
        assistant("a2"),
        user("q3"),
        assistant("a3"),
        user("q4"),
    ]
    sizes = measure(history)
    assert sizes.starts == [0, 4, 9, 11]
    assert choose_cut(sizes, keep_recent_turns=2, room_chars=10**6) == 9
    assert choose_cut(sizes, keep_recent_turns=10, room_chars=10**6) == 4
    assert choose_cut(sizes, keep_recent_turns=10, room_chars=0) == 11, "the last turn stays"
    assert choose_cut(measure([user("only")]), keep_recent_turns=1, room_chars=0) is None
    for keep, room in itertools.product(range(1, 6), (0, 100, 1000, 10**6)):
        cut = choose_cut(sizes, keep_recent_turns=keep, room_chars=room)
        assert cut is not None
        assert is_turn_start(history[cut])
        kept = [b for m in history[cut:] for b in m.content]
        kept_uses = {b.id for b in kept if isinstance(b, ToolUseBlock)}
        kept_results = {b.tool_use_id for b in kept if isinstance(b, ToolResultBlock)}
        assert kept_results - {"t9"} <= kept_uses


def test_old_large_tool_results_are_masked_and_the_last_rounds_stay_whole() -> None:
    history = [user("go")]
    for index in range(5):
        history += tool_round(f"t{index}", f"files__read_{index}", f"LINE{index} " + "z" * 5000)
    history += [assistant("done")]
    history.insert(3, Message("user", (ToolResultBlock("tx", "tiny"),)))  # a small old result
    history.insert(3, Message("assistant", (ToolUseBlock("tx", "calc__add", {}),)))
    masked = mask_tool_results(history, keep_rounds=2, over_chars=2000)
    results = [b for m in masked for b in m.content if isinstance(b, ToolResultBlock)]
    assert [len(b.content) < 400 for b in results] == [True, True, True, True, False, False]
    stub = results[0].content
    assert "files__read_0" in stub
    assert "5,006 characters" in stub
    assert "LINE0 zzz" in stub
    assert results[1].content == "tiny", "small results are left alone"
    assert masked[-1] is history[-1], "unchanged messages are shared, not copied"
    assert history[2].content[0] == ToolResultBlock("t0", "LINE0 " + "z" * 5000), "input unchanged"
    assert mask_tool_results(history, keep_rounds=10, over_chars=10) == history


def test_the_summary_leads_the_first_user_message_and_roles_still_alternate() -> None:
    tail = [user("q5"), assistant("a5"), user("q6")]
    sent = with_summary("They talked about cats.", tail)
    assert [m.role for m in sent] == ["user", "assistant", "user"]
    assert isinstance(sent[0].content[0], TextBlock)
    assert sent[0].content[0].text.startswith(SUMMARY_PREFIX)
    assert sent[0].content[1] == TextBlock("q5")
    assert with_summary("", tail) == tail
    assert with_summary("   ", tail) == tail, "never a whitespace-only summary block"
    lone = with_summary("s", [assistant("a")])
    assert [m.role for m in lone] == ["user", "assistant"]


def test_the_summary_request_is_text_only_and_fits_the_window() -> None:
    covered = [user("q0"), *tool_round("t0", "web__get", "r" * 50_000), assistant("a0")]
    request = summary_request(
        model="m", max_output_tokens=500, context_window=4000, previous="Before.", messages=covered
    )
    assert not request.tools
    assert not request.allow_tools
    [message] = request.messages
    assert message.role == "user"
    assert "Before." in message.text
    assert "web__get" in message.text
    assert len(message.text) < (4000 - 500) * 4
    text = transcript(covered, max_chars=100)
    assert len(text) < 200
    assert text.endswith("Assistant: a0"), "the newest part is what is kept"


@pytest.mark.anyio
async def test_the_stored_history_keeps_masked_results_in_full(
    make_runtime: RuntimeFactory,
) -> None:
    big = "ROW " * 1500

    async def query(_arguments: Mapping[str, Any]) -> str:
        return big

    tools = RecordingTools({"db__query": query})
    rounds = [[CallTool("db__query", {"n": i})] for i in range(5)]
    provider = ScriptedProvider([*rounds, [Say("all done")]])
    async with make_runtime(provider, tools) as runtime:
        session = await runtime.create_session("helper", ALICE)
        result = await runtime.run_turn(TurnRequest(session.id, ALICE, "query five times"))
        history = await runtime.store.history(session.id)
    assert result.ok
    last_request = provider.requests[-1].messages
    sent = [b.content for m in last_request for b in m.content if isinstance(b, ToolResultBlock)]
    assert [len(c) < 500 for c in sent] == [True, True, False, False, False], sent
    assert "db__query" in sent[0]
    stored = [b.content for m in history for b in m.content if isinstance(b, ToolResultBlock)]
    assert stored == [big] * 5


@pytest.mark.anyio
async def test_a_turn_that_fills_the_window_between_tool_rounds_is_compacted_there(
    make_runtime: RuntimeFactory,
) -> None:
    async def read(_arguments: Mapping[str, Any]) -> str:
        return "page " * 900  # 4,500 characters, about 1,100 tokens

    def is_summary(request: ModelRequest) -> bool:
        return any(SUMMARY_INSTRUCTIONS in part.text for part in request.system)

    def reply(request: ModelRequest) -> Reply:
        if is_summary(request):
            return [Say("They chatted about three things.")]
        tool_rounds = sum(1 for m in request.messages for b in m.content if b.type == "tool_use")
        if request.messages[-1].text.startswith("read") or 0 < tool_rounds < 3:
            return [CallTool("web__read", {"n": tool_rounds})]
        return [Say("short answer " * 30)]

    provider = ScriptedProvider(default=reply)
    tools = RecordingTools({"web__read": read})
    async with make_runtime(provider, tools, context_window=4000, max_output_tokens=400) as runtime:
        session = await runtime.create_session("helper", ALICE)
        for index in range(3):
            assert (await runtime.run_turn(TurnRequest(session.id, ALICE, f"chat {index}"))).ok
        before = len(provider.requests)
        result = await runtime.run_turn(TurnRequest(session.id, ALICE, "read three pages"))
    assert result.ok
    turn_requests = provider.requests[before:]
    kinds = ["summary" if is_summary(r) else "main" for r in turn_requests]
    assert kinds.count("summary") == 1
    assert kinds.index("summary") > 1, "the window filled between tool rounds, not before"
    after = turn_requests[kinds.index("summary") + 1].messages
    assert after[0].text.startswith(SUMMARY_PREFIX)
    assert "chat 0" not in " ".join(m.text for m in after)
    assert_valid_history(list(after))
    assert len(tools.calls) == 3
