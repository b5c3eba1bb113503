"""The OpenAI-compatible provider against the strict fake (and its Ollama-, llama.cpp-
and vLLM-style dialects), with the real ``openai`` SDK over real sockets."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import aclosing
from typing import Any

import pytest

from tests.fakes.openai_api import (
    LLAMACPP,
    OLLAMA,
    OPENAI,
    RAW_ERROR_MARKER,
    VLLM,
    Dialect,
    FakeModel,
    FakeUsage,
    OpenAIFake,
    api_error,
    drop_mid_stream,
    error_mid_stream,
    reply,
    text,
    tool_call,
)
from tests.fakes.openai_rules import check_request
from tests.media.samples import pdf, png
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.messages import (
    DocumentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from thalos_bot.domain.prompt import SystemPart
from thalos_bot.media.store import StoredMedia
from thalos_bot.providers.base import (
    ModelDone,
    ModelEvent,
    ModelRequest,
    ModelTextDelta,
    ModelToolUse,
    ModelUsage,
    ProviderError,
)
from thalos_bot.providers.discovery import from_models, from_props, from_show
from thalos_bot.providers.openai import OpenAIProvider
from thalos_bot.providers.openai_mapping import message_params, wire_id
from thalos_bot.tools.types import ToolSpec

pytestmark = pytest.mark.anyio
MODEL = "qwen3:8b"


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake() as server:
        yield server


def provider_for(fake: OpenAIFake, **kwargs: Any) -> OpenAIProvider:
    kwargs.setdefault("max_retries", 0)
    return OpenAIProvider(label="local", base_url=fake.base_url, api_key=None, **kwargs)


def ask(text_: str = "Hi", **kwargs: Any) -> ModelRequest:
    return ModelRequest(
        model=MODEL,
        max_output_tokens=kwargs.pop("max_output_tokens", 256),
        system=kwargs.pop("system", (SystemPart("You are a test bot."),)),
        messages=kwargs.pop("messages", (Message.user(text_),)),
        **kwargs,
    )


async def collect(provider: OpenAIProvider, request: ModelRequest) -> list[ModelEvent]:
    try:
        async with aclosing(provider.stream(request)) as stream:
            return [event async for event in stream]
    finally:
        await provider.aclose()


def done(events: list[ModelEvent]) -> ModelDone:
    last = events[-1]
    assert isinstance(last, ModelDone)
    return last


async def test_text_streams_with_usage_from_the_usage_chunk(fake: OpenAIFake) -> None:
    fake.enqueue(reply(text("Hel", "lo", "!"), usage=FakeUsage(30, 5, 10)))
    events = await collect(provider_for(fake), ask())
    assert [e.text for e in events if isinstance(e, ModelTextDelta)] == ["Hel", "lo", "!"]
    usage = [e for e in events if isinstance(e, ModelUsage)]
    assert usage == [ModelUsage(TokenUsage(20, 5, 10, 0))]
    assert done(events).message == Message("assistant", (TextBlock("Hello!"),))
    assert done(events).stop_reason == "end_turn"
    body = fake.completions[0].body
    assert body["messages"][0] == {"role": "system", "content": "You are a test bot."}
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert fake.completions[0].headers["authorization"] == "Bearer no-key"


async def test_tool_call_fragments_are_assembled_by_index(fake: OpenAIFake) -> None:
    fake.enqueue(
        reply(
            text("Let me look."),
            tool_call("t__echo", {"n": 1, "words": "a b c"}, json_chunks=5),
            tool_call("t__wait", {}),
        )
    )
    tools = [ToolSpec("t__echo", "echo", {"type": "object"}), ToolSpec("t__wait", "wait")]
    events = await collect(provider_for(fake), ask(tools=tools))
    uses = [e.block for e in events if isinstance(e, ModelToolUse)]
    assert [(u.name, dict(u.input)) for u in uses] == [
        ("t__echo", {"n": 1, "words": "a b c"}),
        ("t__wait", {}),
    ]
    assert len({u.id for u in uses}) == 2
    assert done(events).stop_reason == "tool_use"
    sent = fake.completions[0].body["tools"]
    assert sent[0] == {
        "type": "function",
        "function": {"name": "t__echo", "description": "echo", "parameters": {"type": "object"}},
    }


def _history() -> tuple[list[Message], dict[str, StoredMedia]]:
    image, document = png(4, 4), pdf(1)
    media = {
        "img": StoredMedia("img", "image/png", image),
        "doc": StoredMedia("doc", "application/pdf", document),
    }
    long_id = "toolu_" + "x" * 60  # another provider's id, longer than the API allows
    messages = [
        Message("user", (TextBlock("look"), ImageBlock("img", "image/png", len(image)))),
        Message("assistant", (TextBlock("Sure."), ToolUseBlock(long_id, "t__echo", {"n": 1}))),
        Message("user", (ToolResultBlock(long_id, "echo 1"), TextBlock("and this pdf"))),
        Message("assistant", (TextBlock("Seen."),)),
        Message("user", (DocumentBlock("doc", size=len(document), name="a.pdf"),)),
    ]
    return messages, media


async def test_a_history_with_tools_images_and_pdfs_is_one_the_api_accepts(
    fake: OpenAIFake,
) -> None:
    messages, media = _history()
    fake.enqueue(reply(text("ok")))
    await collect(provider_for(fake), ask(messages=messages, media=media))
    sent = fake.completions[0].body["messages"]
    assert [m["role"] for m in sent] == [
        "system",
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
        "user",
    ]
    assert sent[1]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    call_id = sent[2]["tool_calls"][0]["id"]
    assert call_id == sent[3]["tool_call_id"] == wire_id("toolu_" + "x" * 60)
    assert len(call_id) <= 40
    assert sent[2]["tool_calls"][0]["function"]["arguments"] == '{"n": 1}'
    assert "PDF (a.pdf)" in sent[6]["content"]
    assert not fake.refusals


async def test_a_model_without_vision_gets_a_note_instead_of_the_image() -> None:
    messages, media = _history()
    with OpenAIFake(model=FakeModel(vision=False)) as fake:
        fake.enqueue(reply(text("ok")))
        await collect(provider_for(fake, vision=False), ask(messages=messages, media=media))
        sent = fake.completions[0].body["messages"]
        assert "cannot see images" in sent[1]["content"]


async def test_tools_are_not_offered_to_a_model_without_them(fake: OpenAIFake) -> None:
    fake.enqueue(reply(text("ok")))
    await collect(provider_for(fake, tools=False), ask(tools=[ToolSpec("t__echo", "echo")]))
    assert "tools" not in fake.completions[0].body


@pytest.mark.parametrize("dialect", [OLLAMA, LLAMACPP], ids=lambda d: d.name)
async def test_local_servers_quirks_are_absorbed(dialect: Dialect) -> None:
    """No usage chunk (counted and marked an estimate), "stop" after tool calls, ids
    missing or repeated: the tool calls still come out, with ids of ours, unique."""
    with OpenAIFake(dialect=dialect) as fake:
        fake.enqueue(reply(tool_call("t__a", {"x": 1}), tool_call("t__b", {"y": 2})))
        fake.enqueue(reply(tool_call("t__a", {"x": 3})))
        first = await collect(provider_for(fake), ask())
        second = await collect(provider_for(fake), ask())
    uses = [e.block for e in first + second if isinstance(e, ModelToolUse)]
    assert [u.name for u in uses] == ["t__a", "t__b", "t__a"]
    assert len({u.id for u in uses}) == 3
    assert all(u.id.startswith("call_") for u in uses)
    assert done(first).stop_reason == "tool_use"
    usage = [e for e in first if isinstance(e, ModelUsage)]
    assert len(usage) == 1
    assert usage[0].estimated is (dialect is OLLAMA)


async def test_failures_carry_our_words_and_say_whether_another_provider_may_answer(
    fake: OpenAIFake,
) -> None:
    fake.enqueue(api_error(429), api_error(503), error_mid_stream("part"), drop_mid_stream("x"))
    outcomes = []
    for _ in range(4):
        with pytest.raises(ProviderError) as caught:
            await collect(provider_for(fake), ask())
        assert RAW_ERROR_MARKER not in caught.value.user_message
        outcomes.append((caught.value.user_message, caught.value.fallback))
    assert outcomes == [
        ("The model server (local) is rate limiting requests. Try again in a moment.", True),
        ("The model server (local) had an internal error. Try again in a moment.", True),
        ("The model server (local) had an internal error. Try again in a moment.", True),
        ("The model's answer was cut off by a connection error.", True),
    ]


async def test_an_unreachable_server_may_fall_back() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = OpenAIProvider(
        label="local", base_url=f"http://127.0.0.1:{port}/v1", api_key=None, max_retries=0
    )
    with pytest.raises(ProviderError) as caught:
        await collect(provider, ask())
    assert caught.value.fallback
    assert caught.value.user_message == "Could not reach the model server (local)."


async def test_a_named_key_variable_that_is_empty_fails_naming_it() -> None:
    provider = OpenAIProvider(
        label="router", base_url=None, api_key=None, key_env="OPENROUTER_API_KEY"
    )
    with pytest.raises(ProviderError) as caught:
        await collect(provider, ask())
    assert (
        caught.value.user_message == "No API key: set the OPENROUTER_API_KEY environment variable."
    )


@pytest.mark.parametrize("dialect", [OPENAI, VLLM, LLAMACPP], ids=lambda d: d.name)
async def test_a_prompt_over_the_window_is_a_too_long_refusal(dialect: Dialect) -> None:
    with OpenAIFake(dialect=dialect, model=FakeModel(context_window=1000)) as fake:
        with pytest.raises(ProviderError) as caught:
            await collect(provider_for(fake), ask("word " * 2000, max_output_tokens=100))
        assert fake.overflows
    assert caught.value.too_long
    assert not caught.value.fallback
    assert caught.value.window == (None if dialect is LLAMACPP else 1000)


@pytest.mark.parametrize(
    ("dialect", "window"), [(OPENAI, None), (VLLM, 32768), (OLLAMA, 40960), (LLAMACPP, 8192)]
)
async def test_the_context_window_is_asked_of_the_server(
    dialect: Dialect, window: int | None
) -> None:
    with OpenAIFake(dialect=dialect, model=FakeModel(context_window=window or 9999)) as fake:
        provider = provider_for(fake)
        assert await provider.context_window(MODEL) == window
        asked = len(fake.requests)
        assert await provider.context_window(MODEL) == window
        assert len(fake.requests) == asked  # asked once
        await provider.aclose()
    configured = provider_for(fake, context_window=5000)
    assert await configured.context_window(MODEL) == 5000


def test_the_mapping_of_a_history_is_valid_for_the_strict_rules() -> None:
    messages, media = _history()
    body = {"model": MODEL, "messages": message_params(messages, media), "stream": True}
    assert check_request(body) is None


async def test_a_model_without_tool_calling_is_asked_again_without_tools() -> None:
    with OpenAIFake(model=FakeModel(tools=False)) as fake:
        fake.enqueue(reply(text("plain")), reply(text("again")))
        provider = provider_for(fake)
        tools = [ToolSpec("t__echo", "echo")]
        answers = []
        for _ in range(2):
            async with aclosing(provider.stream(ask(tools=tools))) as stream:
                answers.append([event async for event in stream])
        await provider.aclose()
        first, second = answers
        assert fake.tool_refusals == 1, "asked with tools once, then without"
        assert [done(first).message.text, done(second).message.text] == ["plain", "again"]
        assert "tools" not in fake.completions[-1].body


async def test_a_model_that_wants_max_completion_tokens_gets_it() -> None:
    with OpenAIFake(model=FakeModel(completion_tokens_only=True)) as fake:
        fake.enqueue(reply(text("one")), reply(text("two")))
        provider = provider_for(fake)
        for _ in range(2):
            async with aclosing(provider.stream(ask())) as stream:
                assert [e async for e in stream]
        await provider.aclose()
        assert fake.tool_refusals == 1, "told once, remembered"
        assert fake.completions[-1].body["max_completion_tokens"] == 256
        assert "max_tokens" not in fake.completions[-1].body


def test_published_windows_are_read_where_each_server_puts_them() -> None:
    openrouter = {"data": [{"id": "meta/llama", "context_length": 1_048_576}, {"id": "x"}]}
    assert from_models(openrouter, "meta/llama") == 1_048_576
    assert from_models(openrouter, "x") is None
    assert from_models({"data": [{"id": "m", "max_model_len": 8192}]}, "m") == 8192
    assert from_props({"n_ctx": 4096}) == 4096
    show = {"parameters": "stop <eos>\nnum_ctx 16384", "model_info": {"general.architecture": "a"}}
    assert from_show(show) == 16384, "what Ollama runs with, before the model's length"
    assert from_show({"model_info": {"general.architecture": "a", "a.context_length": 9}}) == 9
    assert from_show({"model_info": {}}) is None
