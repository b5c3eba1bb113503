"""The strict fake refuses what the real Messages API refuses, with the API's wording,
and accepts the shapes the real API (and our runtime) use."""

from __future__ import annotations

import copy
from typing import Any

import anthropic
import httpx2
import pytest

from tests.fakes.anthropic_api import AnthropicFake, text_reply
from tests.fakes.anthropic_rules import check_request

pytestmark = pytest.mark.anyio

EPHEMERAL = {"type": "ephemeral"}


def user(*content: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(content)}


def assistant(*content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(content)}


def txt(value: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": value, **extra}


def use(tool_id: str, name: str = "calc__add") -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": {"a": 1}}


def result(tool_id: str, content: Any = "2") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": False}


def image(media_type: str = "image/png", data: str = "iVBORw0KGgo=") -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def document(media_type: str = "application/pdf") -> dict[str, Any]:
    source = {"type": "base64", "media_type": media_type, "data": "JVBERi0x"}
    return {"type": "document", "source": source}


def tool(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "description": "d", "input_schema": {"type": "object"}, **extra}


def body(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "claude-x", "max_tokens": 64, "stream": True, "messages": list(messages)}


def with_fields(request: dict[str, Any], **fields: Any) -> dict[str, Any]:
    out = copy.deepcopy(request)
    out.update(fields)
    return out


HELLO = user(txt("hello"))

# --- accepted ------------------------------------------------------------------------

TOOL_ROUND = body(
    user(txt("2+3?")),
    assistant(txt("Let me add."), use("toolu_1")),
    user(result("toolu_1")),
    assistant(txt("It is 5.")),
    user(txt("thanks")),
)
PARALLEL_TOOLS = body(
    user(txt("both")),
    assistant(use("toolu_a"), use("toolu_b", "calc__mul")),
    user(result("toolu_b"), result("toolu_a", [txt("3")])),
)
INTERRUPTED_THEN_TEXT = body(
    user(txt("go")),
    assistant(use("toolu_1")),
    user({**result("toolu_1", "This tool call did not finish."), "is_error": True}, txt("next")),
)
CACHED = with_fields(
    body(user(txt("hi", cache_control=EPHEMERAL)), assistant(txt("yo")), user(txt("again"))),
    system=[txt("stable", cache_control=EPHEMERAL), txt("per turn")],
    tools=[tool("memory__recall"), tool("skills__read", cache_control=EPHEMERAL)],
    tool_choice={"type": "none"},
)
VALID = {
    "one user message": body(HELLO),
    "a string content": body({"role": "user", "content": "hi"}),
    "a tool round then text": TOOL_ROUND,
    "parallel tool uses answered in any order": PARALLEL_TOOLS,
    "tool results then the next user text": INTERRUPTED_THEN_TEXT,
    "four cache breakpoints over system, tools and messages": with_fields(
        CACHED,
        messages=[user(txt("a", cache_control=EPHEMERAL), txt("b", cache_control=EPHEMERAL))],
    ),
    "prompt caching as the provider sends it": CACHED,
    "consecutive user messages are combined": body(HELLO, user(txt("more"))),
    "an empty final assistant message (prefill)": body(HELLO, assistant()),
    "a final assistant prefill without trailing space": body(HELLO, assistant(txt("Sure"))),
    "an image and a PDF": body(user(image("image/webp"), document(), txt("what is this?"))),
    "whitespace around text, and an earlier assistant text ending in a space": body(
        user(txt("  padded  ")), assistant(txt("ok ")), user(txt("next"))
    ),
}


@pytest.mark.parametrize("name", list(VALID))
def test_valid_shapes_are_accepted(name: str) -> None:
    assert check_request(VALID[name]) is None


# --- refused -----------------------------------------------------------------------------

TOO_BIG = "A" * (5 * 1024 * 1024 + 1)
INVALID: dict[str, tuple[dict[str, Any], str]] = {
    "no messages": (body(), "messages: at least one message is required"),
    "first message from the assistant": (
        body(assistant(txt("hi")), HELLO),
        'messages: first message must use the "user" role',
    ),
    "a message with no content": (
        body(HELLO, assistant(), user(txt("again"))),
        (
            "messages.1: all messages must have non-empty content except for the optional final "
            "assistant message"
        ),
    ),
    "an empty user string": (
        body({"role": "user", "content": ""}),
        "messages.0: all messages must have non-empty content",
    ),
    "an empty text block": (body(user(txt(""))), "messages: text content blocks must be non-empty"),
    "a whitespace-only text block": (
        body(HELLO, assistant(txt("\n\n")), user(txt("next"))),
        "messages: text content blocks must contain non-whitespace text",
    ),
    "a whitespace-only text inside a tool result": (
        body(user(txt("go")), assistant(use("t1")), user(result("t1", [txt(" ")]))),
        "messages: text content blocks must contain non-whitespace text",
    ),
    "a final assistant message ending in whitespace": (
        body(HELLO, assistant(txt("Sure, "))),
        "messages: final assistant content cannot end with trailing whitespace",
    ),
    "a tool_use with no result after it": (
        body(user(txt("go")), assistant(use("toolu_9")), user(txt("well?"))),
        (
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
            "toolu_9. Each `tool_use` block must have a corresponding `tool_result` block in the "
            "next message."
        ),
    ),
    "a tool_use at the very end": (
        body(user(txt("go")), assistant(use("toolu_9"))),
        "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_9",
    ),
    "one of two parallel results missing": (
        body(user(txt("go")), assistant(use("a"), use("b")), user(result("a"))),
        "`tool_use` ids were found without `tool_result` blocks immediately after: b.",
    ),
    "a tool_result after other blocks": (
        body(user(txt("go")), assistant(use("toolu_1")), user(txt("next"), result("toolu_1"))),
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after",
    ),
    "a tool_result that answers nothing": (
        body(user(result("toolu_gone"), txt("next"))),
        (
            "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
            "toolu_gone. Each `tool_result` block must have a corresponding `tool_use` block in "
            "the previous message."
        ),
    ),
    "a tool_result for an older tool_use": (
        body(
            user(txt("go")),
            assistant(use("t1")),
            user(result("t1")),
            assistant(txt("done")),
            user(result("t1")),
        ),
        "messages.4.content.0: unexpected `tool_use_id` found in `tool_result` blocks: t1.",
    ),
    "a tool_use in a user message": (
        body(user(txt("go"), use("t1"))),
        "messages.0: `tool_use` blocks can only be in `assistant` messages",
    ),
    "a tool_result in an assistant message": (
        body(HELLO, assistant(result("t1"))),
        "messages.1: `tool_result` blocks can only be in `user` messages",
    ),
    "five cache breakpoints": (
        with_fields(
            CACHED,
            messages=[
                user(*(txt(t, cache_control=EPHEMERAL) for t in "abc")),
            ],
        ),
        "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    ),
    "a tool name with a dot": (
        with_fields(body(HELLO), tools=[tool("ok_name"), tool("memory.recall")]),
        "tools.1.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'",
    ),
    "a tool name too long": (
        with_fields(body(HELLO), tools=[tool("x" * 129)]),
        "tools.0.custom.name: String should match pattern",
    ),
    "two tools with one name": (
        with_fields(body(HELLO), tools=[tool("a__b"), tool("a__b")]),
        "tools: Tool names must be unique.",
    ),
    "an empty system block": (
        with_fields(body(HELLO), system=[txt("")]),
        "system: text content blocks must be non-empty",
    ),
    "a whitespace system block": (
        with_fields(body(HELLO), system=[txt("ok"), txt(" \n")]),
        "system: text content blocks must contain non-whitespace text",
    ),
    "an image of an unsupported type": (
        body(user(txt("look"), image("image/bmp"))),
        (
            "messages.0.content.1.image.source.base64.media_type: Input should be 'image/jpeg', "
            "'image/png', 'image/gif' or 'image/webp'"
        ),
    ),
    "an image over 5 MB": (
        body(user(image(data=TOO_BIG))),
        (
            "messages.0.content.0.image.source.base64: image exceeds 5 MB maximum: 5242881 bytes > "
            "5242880 bytes"
        ),
    ),
    "an image in a tool result over 5 MB": (
        body(user(txt("go")), assistant(use("t1")), user(result("t1", [image(data=TOO_BIG)]))),
        "messages.2.content.0.tool_result.content.0.image.source.base64: image exceeds 5 MB",
    ),
    "a document that is not a PDF": (
        body(user(document("application/msword"), txt("summarize"))),
        "messages.0.content.0.document.source.base64.media_type: Input should be 'application/pdf'",
    ),
    "more than 100 images and documents": (
        body(user(*[image() for _ in range(100)], document("application/pdf"), txt("all"))),
        "too many images and documents: 100 + 1 > 100",
    ),
    "a role that does not exist": (
        body({"role": "system", "content": "x"}),
        "messages.0.role: Input should be 'user' or 'assistant'",
    ),
}


@pytest.mark.parametrize("name", list(INVALID))
def test_each_invalid_shape_is_refused_with_the_api_wording(name: str) -> None:
    request, expected = INVALID[name]
    problem = check_request(request)
    assert problem is not None, f"{name} was accepted"
    assert expected in problem


# --- over HTTP ----------------------------------------------------------------------------


async def test_a_refusal_is_a_400_with_the_api_envelope_and_consumes_no_reply() -> None:
    bad = body(HELLO, assistant(txt("  ")), user(txt("next")))
    with AnthropicFake() as fake:
        fake.expect_refusals()
        fake.enqueue(text_reply("for the next valid request"))
        async with httpx2.AsyncClient(base_url=fake.base_url) as client:
            refused = await client.post("/v1/messages", json=bad)
            accepted = await client.post("/v1/messages", json=body(HELLO))
    assert refused.status_code == 400
    envelope = refused.json()
    assert envelope["type"] == "error"
    assert envelope["error"] == {
        "type": "invalid_request_error",
        "message": "messages: text content blocks must contain non-whitespace text",
    }
    assert envelope["request_id"].startswith("req_")
    assert accepted.status_code == 200, "the queued reply was kept for the valid request"
    assert [r.number for r in fake.refusals] == [0]


async def test_the_sdk_sees_a_bad_request_and_does_not_retry() -> None:
    client = anthropic.AsyncAnthropic(api_key="sk-test", base_url="http://unused", max_retries=2)
    with AnthropicFake() as fake:
        fake.expect_refusals()
        client = client.with_options(base_url=fake.base_url)
        with pytest.raises(anthropic.BadRequestError) as refused:
            await client.messages.create(
                model="claude-x",
                max_tokens=16,
                messages=[{"role": "assistant", "content": "I start"}],
                stream=True,
            )
        await client.close()
    assert refused.value.status_code == 400
    assert 'first message must use the "user" role' in str(refused.value)
    assert len(fake.requests) == 1


async def test_an_unexpected_refusal_fails_the_test_with_the_reason() -> None:
    with pytest.raises(AssertionError) as failure, AnthropicFake() as fake:
        async with httpx2.AsyncClient(base_url=fake.base_url) as client:
            await client.post("/v1/messages", json=body(user(txt(""))))
    message = str(failure.value)
    assert "request #0 was refused as the real API would refuse it" in message
    assert "text content blocks must be non-empty" in message
