"""repair_history: every broken stored shape becomes a history the real API accepts."""

from __future__ import annotations

import pytest

from tests.fakes.anthropic_rules import check_request
from tests.runtime.api_body import messages_body, raw_body
from thalos_bot.domain.messages import (
    Block,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    append_message,
)
from thalos_bot.runtime.repair import UNFINISHED_TOOL_RESULT, repair_history


def u(*blocks: Block | str) -> Message:
    return Message("user", tuple(TextBlock(b) if isinstance(b, str) else b for b in blocks))


def a(*blocks: Block | str) -> Message:
    return Message("assistant", tuple(TextBlock(b) if isinstance(b, str) else b for b in blocks))


def call(tool_id: str) -> ToolUseBlock:
    return ToolUseBlock(tool_id, "calc__add", {"a": 1})


def res(tool_id: str, content: str = "2") -> ToolResultBlock:
    return ToolResultBlock(tool_id, content)


VALID = [
    u("hi"),
    a("Let me add.", call("t1")),
    u(res("t1")),
    a("It is 2."),
    u("both"),
    a(call("t2"), call("t3")),
    u(res("t3"), res("t2"), "and then?"),
    a("done"),
]

BROKEN: dict[str, tuple[list[Message], dict[str, int]]] = {
    "a whitespace-only answer": (
        [u("hi"), a("\n\n"), u("next")],
        {"blank_text": 1, "empty_messages": 1, "merged_messages": 1},
    ),
    "an empty text block next to a tool call": (
        [u("go"), a(" ", call("t1")), u(res("t1"))],
        {"blank_text": 1},
    ),
    "an assistant message with no content": (
        [u("hi"), a(), u("next")],
        {"empty_messages": 1, "merged_messages": 1},
    ),
    "a tool call never answered, at the end": (
        [u("go"), a("Checking.", call("t1"))],
        {"dangling_tool_uses": 1},
    ),
    "a tool call never answered, mid-history": (
        [u("go"), a(call("t1")), u("well?"), a("Sorry.")],
        {"dangling_tool_uses": 1},
    ),
    "one of two parallel calls answered": (
        [u("go"), a(call("t1"), call("t2")), u(res("t2"))],
        {"dangling_tool_uses": 1},
    ),
    "a result whose call was trimmed away": (
        [u(res("gone"), "next"), a("ok")],
        {"orphan_tool_results": 1},
    ),
    "a result that is the whole message": (
        [u("hi"), a("hello"), u(res("gone")), a("more"), u("next")],
        {"orphan_tool_results": 1, "empty_messages": 1},
    ),
    "a result after the user's text": (
        [u("go"), a(call("t1")), u("next", res("t1"))],
        {"reordered_results": 1},
    ),
    "a history that starts with the assistant": (
        [a("Welcome!", call("t0")), u(res("t0")), u("hi"), a("hello")],
        {"leading_assistant": 1, "orphan_tool_results": 1, "merged_messages": 1},
    ),
    "a tool call inside a user message": (
        [u("hi", call("t9")), a("ok")],
        {"misplaced_blocks": 1},
    ),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_each_broken_shape_is_repaired_into_what_the_api_accepts(name: str) -> None:
    broken, expected_fixes = BROKEN[name]
    assert check_request(raw_body([*broken, u("new question")])) is not None, (
        "the shape must really be refused before the repair"
    )
    repaired = repair_history(broken)
    assert repaired.changed
    assert dict(repaired.fixes) == expected_fixes
    next_request = append_message(repaired.messages, u("new question"))
    assert check_request(messages_body(next_request)) is None
    assert repair_history(repaired.messages).fixes == {}, "a repaired history stays put"


def test_a_valid_history_is_left_exactly_as_it_is() -> None:
    repaired = repair_history(VALID)
    assert not repaired.changed
    assert repaired.messages == VALID


def test_an_unanswered_call_is_closed_with_an_error_result_before_the_next_words() -> None:
    repaired = repair_history([u("go"), a(call("t1"), call("t2")), u(res("t2"), "well?")])
    assert repaired.messages[-1] == u(
        ToolResultBlock("t1", UNFINISHED_TOOL_RESULT, is_error=True), res("t2"), "well?"
    ), "the answers come first, in the order of the calls"


def test_roles_alternate_and_a_result_is_kept_once() -> None:
    repaired = repair_history([u("one"), u("two"), a(call("t1")), u(res("t1"), res("t1"))])
    assert [m.role for m in repaired.messages] == ["user", "assistant", "user"]
    assert repaired.messages[0] == u("one", "two")
    assert repaired.messages[2] == u(res("t1"))
    assert repaired.fixes == {"merged_messages": 1, "orphan_tool_results": 1}


def test_what_the_user_said_is_kept() -> None:
    broken = [a("stray"), u("first"), a("\n"), u("second"), a(call("t1"))]
    repaired = repair_history(broken)
    said = [m.text for m in repaired.messages if m.role == "user" and m.text]
    assert said == ["firstsecond"]
    assert repaired.messages[0].text == "firstsecond"
    assert [b.text for b in repaired.messages[0].content if isinstance(b, TextBlock)] == [
        "first",
        "second",
    ]


def test_a_long_broken_history_is_repaired_in_one_pass() -> None:
    history: list[Message] = []
    for n in range(3_000):
        history += [u(f"q{n}"), a(" "), a(call(f"t{n}"))]
    repaired = repair_history(history)
    assert repaired.fixes["blank_text"] == 3_000
    assert repaired.fixes["dangling_tool_uses"] == 3_000
    assert check_request(messages_body([*repaired.messages, u("last")])) is None
