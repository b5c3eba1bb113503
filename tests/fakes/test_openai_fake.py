"""The OpenAI-compatible fake refuses what the real API refuses, with its wording, and
streams the way servers do."""

from __future__ import annotations

import base64
from typing import Any

import openai
import pytest

from tests.fakes import openai_rules as rules
from tests.fakes.openai_api import OLLAMA, FakeModel, OpenAIFake, reply, text, tool_call
from tests.fakes.openai_rules import check_request
from tests.media.samples import png

CALL = {"id": "call_1", "type": "function", "function": {"name": "t__a", "arguments": "{}"}}


def body(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": list(messages), **extra}


def user(content: Any = "hi") -> dict[str, Any]:
    return {"role": "user", "content": content}


def test_a_tool_message_must_answer_the_assistant_message_just_before() -> None:
    problem = check_request(
        body(user(), {"role": "tool", "tool_call_id": "call_1", "content": "x"})
    )
    assert problem is not None
    assert problem.message == rules.ORPHAN_TOOL
    assert problem.param == "messages.[1].role"
    answered = body(
        user(),
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "x"},
    )
    assert check_request(answered) is None


def test_every_tool_call_must_be_answered() -> None:
    second = {**CALL, "id": "call_2"}
    problem = check_request(
        body(
            user(),
            {"role": "assistant", "content": "", "tool_calls": [CALL, second]},
            {"role": "tool", "tool_call_id": "call_1", "content": "x"},
            user("next"),
        )
    )
    assert problem is not None
    assert problem.message.endswith("did not have response messages: call_2")
    assert problem.param == "messages.[1].role"


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (user(""), "string too short"),
        (user([]), "empty array"),
        ({"role": "assistant", "content": None}, rules.NULL_CONTENT),
        ({"role": "robot", "content": "x"}, "Invalid value: 'robot'. Supported values are"),
        (user([{"type": "image_url", "image_url": {"url": "file:///x.png"}}]), "Expected a base64"),
        (
            user([{"type": "image_url", "image_url": {"url": "data:image/png;base64,bm9wZQ=="}}]),
            rules.BAD_IMAGE,
        ),
    ],
)
def test_content_roles_and_images_are_checked(message: dict[str, Any], expected: str) -> None:
    problem = check_request(body(user(), message) if message["role"] != "user" else body(message))
    assert problem is not None
    assert expected in problem.message


def test_a_real_image_and_a_long_call_id() -> None:
    data = base64.b64encode(png(2, 2)).decode()
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}
    assert check_request(body(user([{"type": "text", "text": "see"}, image]))) is None
    long_call = {**CALL, "id": "c" * 41}
    problem = check_request(
        body(user(), {"role": "assistant", "content": None, "tool_calls": [long_call]})
    )
    assert problem is not None
    assert "maximum length 40" in problem.message


def test_max_tokens_over_the_model_limit() -> None:
    problem = check_request(body(user(), max_tokens=20_000), max_completion_tokens=16_384)
    assert problem is not None
    assert problem.message == (
        "max_tokens is too large: 20000. This model supports at most 16384 completion "
        "tokens, whereas you provided 20000."
    )


async def _create(fake: OpenAIFake, **kwargs: Any) -> list[Any]:
    """Every chunk of one streamed completion, read before the client closes (closing it
    first would cut the stream off while it is still being read)."""
    client = openai.AsyncOpenAI(api_key="k", base_url=fake.base_url, max_retries=0)
    try:
        stream = await client.chat.completions.create(model=fake.model.name, stream=True, **kwargs)
        return [chunk async for chunk in stream]
    finally:
        await client.close()


@pytest.mark.anyio
async def test_a_refusal_reaches_the_sdk_as_a_400_with_param_and_code() -> None:
    with OpenAIFake() as fake:
        fake.expect_refusals()
        with pytest.raises(openai.BadRequestError) as caught:
            await _create(fake, messages=[{"role": "tool", "tool_call_id": "x", "content": "y"}])
        assert caught.value.status_code == 400
        assert isinstance(caught.value.body, dict)
        assert caught.value.body["message"] == rules.ORPHAN_TOOL
        assert caught.value.body["param"] == "messages.[0].role"
        assert len(fake.refusals) == 1


@pytest.mark.anyio
async def test_tool_calls_stream_as_fragments_by_index_then_finish_then_usage() -> None:
    with OpenAIFake() as fake:
        fake.enqueue(reply(text("a"), tool_call("t__x", {"k": "vvvvvv"}, json_chunks=3)))
        chunks = await _create(fake, messages=[user()], stream_options={"include_usage": True})
    fragments = [
        c.choices[0].delta.tool_calls for c in chunks if c.choices and c.choices[0].delta.tool_calls
    ]
    assert fragments[0][0].id is not None
    assert fragments[0][0].function.name == "t__x"
    assert all(f[0].index == 0 for f in fragments)
    assert "".join(f[0].function.arguments or "" for f in fragments) == '{"k":"vvvvvv"}'
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "tool_calls"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None


@pytest.mark.anyio
async def test_the_ollama_dialect_sends_no_usage_and_stop_after_tool_calls() -> None:
    with OpenAIFake(dialect=OLLAMA, model=FakeModel()) as fake:
        fake.enqueue(reply(tool_call("t__x", {})))
        chunks = await _create(fake, messages=[user()], stream_options={"include_usage": True})
    assert all(c.usage is None for c in chunks)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
