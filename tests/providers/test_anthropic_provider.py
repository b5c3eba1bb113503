"""The Anthropic provider against the local fake, with the real SDK over real sockets."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import aclosing
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from tests.fakes.anthropic_api import (
    RAW_ERROR_MARKER,
    AnthropicFake,
    ErrorReply,
    FakeUsage,
    StreamReply,
    api_error,
    drop_mid_stream,
    error_mid_stream,
    event,
    hang_mid_stream,
    overloaded,
    reply,
    text,
    text_reply,
    tool_use,
    tool_use_reply,
)
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from thalos_bot.domain.prompt import SystemPart
from thalos_bot.providers import anthropic_mapping as wording
from thalos_bot.providers.anthropic import AnthropicProvider
from thalos_bot.providers.base import (
    ModelDone,
    ModelEvent,
    ModelRequest,
    ModelTextDelta,
    ModelToolUse,
    ModelUsage,
    ProviderError,
)
from thalos_bot.tools.types import ToolSpec

pytestmark = pytest.mark.anyio

KEY = "sk-test-not-a-real-key-4411"
MODEL = "claude-sonnet-5-5"


@pytest.fixture
def fake() -> Iterator[AnthropicFake]:
    with AnthropicFake() as server:
        yield server


def provider_for(fake: AnthropicFake, **kwargs: Any) -> AnthropicProvider:
    return AnthropicProvider(api_key=KEY, base_url=fake.base_url, **kwargs)


def ask(text_: str = "Hi", **kwargs: Any) -> ModelRequest:
    return ModelRequest(
        model=MODEL,
        max_output_tokens=256,
        system=kwargs.pop("system", (SystemPart("You are a test bot."),)),
        messages=kwargs.pop("messages", (Message.user(text_),)),
        **kwargs,
    )


async def collect(provider: AnthropicProvider, request: ModelRequest) -> list[ModelEvent]:
    try:
        async with aclosing(provider.stream(request)) as stream:
            return [event async for event in stream]
    finally:
        await provider.aclose()


async def failure(
    provider: AnthropicProvider, request: ModelRequest
) -> tuple[ProviderError, list[ModelEvent]]:
    """The ProviderError the stream ends with, and the events seen before it."""
    events: list[ModelEvent] = []
    try:
        async with aclosing(provider.stream(request)) as stream:
            async for event in stream:
                events.append(event)  # noqa: PERF401 - keep what came before the failure
    except ProviderError as err:
        return err, events
    finally:
        await provider.aclose()
    pytest.fail(f"the stream ended without a ProviderError: {events}")


def content(events: list[ModelEvent]) -> list[ModelEvent]:
    """The events without usage reports."""
    return [e for e in events if not isinstance(e, ModelUsage)]


def assert_safe(err: ProviderError) -> None:
    for shown in (str(err), err.user_message):
        assert RAW_ERROR_MARKER not in shown
        assert KEY not in shown


# --- streaming ---------------------------------------------------------------------------


async def test_text_reply_streams_deltas_in_order_and_ends_with_done(
    fake: AnthropicFake,
) -> None:
    usage = FakeUsage(
        input_tokens=100,
        output_tokens=42,
        cache_read_input_tokens=80,
        cache_creation_input_tokens=20,
    )
    fake.enqueue(text_reply("Hel", "lo, ", "world", usage=usage))

    events = await collect(provider_for(fake), ask())

    assert [e.text for e in events if isinstance(e, ModelTextDelta)] == ["Hel", "lo, ", "world"]
    usages = [e.usage for e in events if isinstance(e, ModelUsage)]
    assert sum(usages, TokenUsage()) == TokenUsage(100, 42, 80, 20)
    assert events[0] == ModelUsage(TokenUsage(100, 1, 80, 20))  # input counted at the start
    assert events[-1] == ModelDone(Message("assistant", (TextBlock("Hello, world"),)), "end_turn")
    assert sum(isinstance(e, ModelDone) for e in events) == 1


async def test_a_delta_arrives_before_the_stream_ends(fake: AnthropicFake) -> None:
    fake.enqueue(hang_mid_stream(after_text="early words"))
    provider = provider_for(fake)
    with anyio.fail_after(5):
        async with aclosing(provider.stream(ask())) as stream:
            first = await anext(e async for e in stream if isinstance(e, ModelTextDelta))
    await provider.aclose()
    assert first == ModelTextDelta("early words")


async def test_tool_use_yields_one_complete_call(fake: AnthropicFake) -> None:
    arguments = {"query": "cats and dogs", "limit": 3, "tags": ["a", "b"]}
    fake.enqueue(
        tool_use_reply(
            "memory__recall", arguments, id="toolu_1", json_chunks=4, text_before="Let me check."
        )
    )

    events = await collect(provider_for(fake), ask())

    calls = [e for e in events if isinstance(e, ModelToolUse)]
    assert calls == [ModelToolUse(ToolUseBlock("toolu_1", "memory__recall", arguments))]
    assert content(events)[0] == ModelTextDelta("Let me check.")
    done = events[-1]
    assert isinstance(done, ModelDone)
    assert done.stop_reason == "tool_use"
    assert done.message.content == (
        TextBlock("Let me check."),
        ToolUseBlock("toolu_1", "memory__recall", arguments),
    )


async def test_several_tool_calls_keep_their_order(fake: AnthropicFake) -> None:
    fake.enqueue(
        reply(
            text("Two ", "things."),
            tool_use("a__first", {"n": 1}, id="toolu_a"),
            tool_use("b__second", {}, id="toolu_b", json_chunks=1),
        )
    )

    events = await collect(provider_for(fake), ask())

    assert [e.block.id for e in events if isinstance(e, ModelToolUse)] == ["toolu_a", "toolu_b"]
    done = events[-1]
    assert isinstance(done, ModelDone)
    assert [type(b) for b in done.message.content] == [TextBlock, ToolUseBlock, ToolUseBlock]
    assert done.message.tool_uses[1].input == {}


async def test_a_reply_function_sees_the_request(fake: AnthropicFake) -> None:
    fake.enqueue(lambda request: text_reply("You said: " + request.last_user_text))

    events = await collect(provider_for(fake), ask("ping"))

    done = events[-1]
    assert isinstance(done, ModelDone)
    assert done.message.text == "You said: ping"


# --- what the SDK sends --------------------------------------------------------------------


def _tools() -> tuple[ToolSpec, ...]:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    return (
        ToolSpec("memory__recall", "Recall memories.", schema),
        ToolSpec("skills__list", "List skills."),
    )


def _history() -> tuple[Message, ...]:
    return (
        Message.user("What is in the notes?"),
        Message(
            "assistant",
            (TextBlock("Checking."), ToolUseBlock("toolu_9", "memory__recall", {"q": "notes"})),
        ),
        Message(
            "user",
            (
                ToolResultBlock("toolu_9", "disk on fire", is_error=True),
                TextBlock("And hurry."),
            ),
        ),
    )


async def test_request_carries_cache_breakpoints_tools_and_history(fake: AnthropicFake) -> None:
    fake.enqueue(text_reply("ok"))
    request = ask(
        system=(
            SystemPart("Persona."),
            SystemPart("Recalled: the cat is called Tom.", cacheable=False),
            SystemPart("Skills index."),
        ),
        messages=_history(),
        tools=_tools(),
    )

    await collect(provider_for(fake), request)

    (sent,) = fake.requests
    body = sent.body
    assert sent.path == "/v1/messages"
    assert body["model"] == MODEL
    assert body["max_tokens"] == 256
    assert body["stream"] is True
    assert KEY in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "")[7:])
    assert body["system"] == [
        {"type": "text", "text": "Persona."},
        {"type": "text", "text": "Skills index.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Recalled: the cat is called Tom."},
    ]
    assert body["tools"] == [
        {
            "name": "memory__recall",
            "description": "Recall memories.",
            "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
        {
            "name": "skills__list",
            "description": "List skills.",
            "input_schema": {"type": "object", "properties": {}},
            "cache_control": {"type": "ephemeral"},
        },
    ]
    assert "tool_choice" not in body
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "What is in the notes?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "toolu_9",
                    "name": "memory__recall",
                    "input": {"q": "notes"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_9",
                    "content": "disk on fire",
                    "is_error": True,
                },
                {"type": "text", "text": "And hurry."},
            ],
        },
    ]


async def test_no_cache_control_when_prompt_caching_is_off(fake: AnthropicFake) -> None:
    fake.enqueue(text_reply("ok"))

    await collect(provider_for(fake, prompt_caching=False), ask(tools=_tools()))

    assert "cache_control" not in repr(fake.requests[0].body)


async def test_only_volatile_system_parts_get_no_breakpoint(fake: AnthropicFake) -> None:
    fake.enqueue(text_reply("ok"))

    await collect(provider_for(fake), ask(system=(SystemPart("Recalled.", cacheable=False),)))

    assert fake.requests[0].body["system"] == [{"type": "text", "text": "Recalled."}]


async def test_allow_tools_false_sends_tool_choice_none(fake: AnthropicFake) -> None:
    fake.enqueue(text_reply("Just text."))

    await collect(provider_for(fake), ask(tools=_tools(), allow_tools=False))

    body = fake.requests[0].body
    assert body["tool_choice"] == {"type": "none"}
    assert [t["name"] for t in body["tools"]] == ["memory__recall", "skills__list"]


async def test_empty_system_and_tools_are_left_out(fake: AnthropicFake) -> None:
    fake.enqueue(text_reply("ok"))

    await collect(provider_for(fake), ask(system=(), allow_tools=False))

    body = fake.requests[0].body
    assert "system" not in body
    assert "tools" not in body
    assert "tool_choice" not in body


# --- failures ------------------------------------------------------------------------------


async def test_overloaded_then_success_is_retried_by_the_sdk(fake: AnthropicFake) -> None:
    fake.enqueue(overloaded(), text_reply("Made it."))

    events = await collect(provider_for(fake, max_retries=2), ask())

    assert len(fake.requests) == 2
    done = events[-1]
    assert isinstance(done, ModelDone)
    assert done.message.text == "Made it."


async def test_overloaded_on_every_attempt_is_our_error(fake: AnthropicFake) -> None:
    fake.enqueue(overloaded(), overloaded())

    with capture_logs() as logs:
        err, _ = await failure(provider_for(fake, max_retries=1), ask())

    assert len(fake.requests) == 2
    assert err.user_message == wording.OVERLOADED
    assert err.retryable
    assert_safe(err)
    warning = next(e for e in logs if e["event"] == "anthropic_call_failed")
    assert warning["log_level"] == "warning"
    assert warning["status_code"] == 529
    assert RAW_ERROR_MARKER in warning["detail"]  # the raw cause goes to the log ...
    assert KEY not in repr(logs)  # ... and the key never does


async def test_rejected_key_names_the_variable(fake: AnthropicFake) -> None:
    fake.enqueue(api_error(401, "authentication_error"))

    with capture_logs() as logs:
        err, _ = await failure(provider_for(fake), ask())

    assert len(fake.requests) == 1  # not retried
    assert err.user_message == wording.BAD_API_KEY
    assert "ANTHROPIC_API_KEY" in str(err)
    assert not err.retryable
    assert_safe(err)
    assert KEY not in repr(logs)


async def test_error_event_mid_stream(fake: AnthropicFake) -> None:
    fake.enqueue(error_mid_stream(after_text="Half an ans"))

    err, events = await failure(provider_for(fake, max_retries=0), ask())

    assert content(events) == [ModelTextDelta("Half an ans")]
    assert err.user_message == wording.OVERLOADED
    assert_safe(err)


async def test_unknown_error_event_mid_stream(fake: AnthropicFake) -> None:
    fake.enqueue(error_mid_stream(error_type="brand_new_error"))

    err, _ = await failure(provider_for(fake, max_retries=0), ask())

    assert err.user_message == wording.UNAVAILABLE
    assert_safe(err)


async def test_dropped_connection_mid_stream(fake: AnthropicFake) -> None:
    fake.enqueue(drop_mid_stream(after_text="Half"))

    err, events = await failure(provider_for(fake, max_retries=0), ask())

    assert content(events) == [ModelTextDelta("Half")]
    assert err.user_message == wording.CUT_OFF
    assert err.retryable
    assert_safe(err)


@pytest.mark.parametrize(
    ("status", "error_type", "expected"),
    [
        (400, "invalid_request_error", wording.REJECTED),
        (403, "permission_error", wording.PERMISSION),
        (404, "not_found_error", wording.NOT_FOUND),
        (413, "request_too_large", wording.TOO_LARGE),
        (429, "rate_limit_error", wording.RATE_LIMITED),
        (500, "api_error", wording.SERVER_ERROR),
    ],
)
async def test_http_errors_become_our_sentences(
    fake: AnthropicFake, status: int, error_type: str, expected: str
) -> None:
    fake.enqueue(api_error(status, error_type))

    err, _ = await failure(provider_for(fake, max_retries=0), ask())

    assert err.user_message == expected
    assert_safe(err)


async def test_stream_ending_without_message_stop_is_cut_off(fake: AnthropicFake) -> None:
    clean_but_short = drop_mid_stream(after_text="Half").steps[:-1]  # no Drop: ends cleanly
    fake.enqueue(StreamReply(clean_but_short))

    err, events = await failure(provider_for(fake, max_retries=0), ask())

    assert content(events) == [ModelTextDelta("Half")]
    assert err.user_message == wording.CUT_OFF


async def test_unparsable_tool_input_is_our_error(fake: AnthropicFake) -> None:
    block = {"type": "tool_use", "id": "toolu_x", "name": "a__b", "input": {}}
    bad_json = {"type": "input_json_delta", "partial_json": '{"a": tru'}
    fake.enqueue(
        StreamReply(
            (
                reply().steps[0],  # message_start
                event("content_block_start", index=0, content_block=block),
                event("content_block_delta", index=0, delta=bad_json),
                event("content_block_stop", index=0),
            )
        )
    )

    err, events = await failure(provider_for(fake, max_retries=0), ask())

    assert err.user_message == wording.UNREADABLE
    assert not any(isinstance(e, ModelToolUse) for e in events)


async def test_unreachable_api() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again below: nothing listens there
    provider = AnthropicProvider(api_key=KEY, base_url=f"http://127.0.0.1:{port}", max_retries=0)

    err, _ = await failure(provider, ask())

    assert err.user_message == wording.UNREACHABLE
    assert_safe(err)


async def test_stalled_stream_times_out(fake: AnthropicFake) -> None:
    fake.enqueue(hang_mid_stream())

    err, _ = await failure(provider_for(fake, timeout=0.3, max_retries=0), ask())

    assert err.user_message == wording.TIMED_OUT
    assert await fake.wait_for_hangup()


async def test_no_api_key_fails_without_network(fake: AnthropicFake) -> None:
    provider = AnthropicProvider(api_key=None, base_url=fake.base_url)

    err, events = await failure(provider, ask())

    assert err.user_message == (
        "No API key: set the ANTHROPIC_API_KEY environment variable, "
        "or run `thalos-bot chat --offline` to try the echo model."
    )
    assert events == []
    assert fake.requests == []


async def test_stopping_early_releases_the_connection(fake: AnthropicFake) -> None:
    fake.enqueue(hang_mid_stream(after_text="more to come"))
    provider = provider_for(fake)

    with anyio.fail_after(5):
        async with aclosing(provider.stream(ask())) as stream:
            async for _ in stream:
                break
        released = await fake.wait_for_hangup()  # the client is still open
    await provider.aclose()

    assert released


# --- cancellation --------------------------------------------------------------------------


async def test_cancel_mid_stream_returns_promptly_and_closes_the_connection(
    fake: AnthropicFake,
) -> None:
    fake.enqueue(hang_mid_stream(after_text="thinking"))
    provider = provider_for(fake)
    seen: list[ModelEvent] = []
    first = anyio.Event()

    async def consume() -> None:
        async with aclosing(provider.stream(ask())) as stream:
            async for event in stream:
                seen.append(event)
                if isinstance(event, ModelTextDelta):
                    first.set()

    # The fake hangs for ever after "thinking" (and the provider's read timeout is far
    # longer than this bound): the task group ending at all shows the cancel did not
    # wait for the stream.
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await first.wait()
            tg.cancel_scope.cancel()
    await provider.aclose()

    assert content(seen) == [ModelTextDelta("thinking")]
    assert await fake.wait_for_hangup()


async def test_a_prompt_over_the_window_is_a_too_long_refusal(fake: AnthropicFake) -> None:
    message = "prompt is too long: 210000 tokens > 200000 maximum"
    fake.enqueue(ErrorReply(400, "invalid_request_error", message))
    with pytest.raises(ProviderError) as caught:
        await collect(provider_for(fake, max_retries=0), ask())
    assert (caught.value.too_long, caught.value.window) == (True, 200_000)
    assert caught.value.user_message == wording.TOO_LARGE
