"""One request at a time per API conversation, and a client that leaves mid-answer: a
second request while the first is being answered gets OpenAI's 429 (the first goes on);
closing a stream cancels the turn (the model's connection is dropped, the partial answer
is not charged again), and the conversation takes the next request."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from tests.fakes.anthropic_api import AnthropicFake, FakeUsage, hang_mid_stream, text_reply
from tests.web.harness import WebDaemon, web_daemon
from tests.web.test_openai_api import client, make_key


@pytest.fixture(scope="module")
def api_daemon(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[WebDaemon, AnthropicFake]]:
    with (
        AnthropicFake() as anthropic,
        web_daemon(tmp_path_factory.mktemp("api-turns"), anthropic.base_url, "api = true") as d,
    ):
        yield d, anthropic


def hung_up(anthropic: AnthropicFake, count: int) -> bool:
    """Whether the fake saw ``count`` clients leave a hung reply (waiting up to 30 s)."""
    return anyio.run(anthropic.wait_for_hangup, count, 30.0)


def test_a_busy_conversation_answers_429_and_the_first_request_goes_on(
    api_daemon: tuple[WebDaemon, AnthropicFake],
) -> None:
    daemon, anthropic = api_daemon
    api = client(daemon, make_key(daemon, "--person", "p1"))
    anthropic.enqueue(hang_mid_stream("Thinking hard"))
    first = api.chat.completions.create(
        model="assistant",
        messages=[{"role": "user", "content": "a long question"}],
        user="conv-busy",
        stream=True,
    )
    seen = ""
    for chunk in first:
        seen += (chunk.choices[0].delta.content or "") if chunk.choices else ""
        if seen:
            break
    assert seen.startswith("Thinking")
    with pytest.raises(openai.RateLimitError) as refused:
        api.chat.completions.create(
            model="assistant",
            messages=[{"role": "user", "content": "a long question"}],
            user="conv-busy",
        )
    assert refused.value.code == "conversation_busy"
    assert refused.value.response.headers["retry-after"] == "1"
    assert "answering another request" in refused.value.message
    other = api.chat.completions.create(  # another conversation of the same key is free
        model="assistant", messages=[{"role": "user", "content": "/status"}], user="conv-other"
    )
    assert (other.choices[0].message.content or "").startswith("Agent:")
    hangups = anthropic.hangups
    first.close()
    assert hung_up(anthropic, hangups + 1)


def test_a_client_leaving_mid_stream_cancels_the_turn_and_the_next_request_works(
    api_daemon: tuple[WebDaemon, AnthropicFake],
) -> None:
    daemon, anthropic = api_daemon
    api = client(daemon, make_key(daemon, "--person", "p2"))
    anthropic.enqueue(hang_mid_stream("I will go on and on"))
    asked: list[ChatCompletionMessageParam] = [{"role": "user", "content": "tell me everything"}]
    leaving = api.chat.completions.create(
        model="assistant",
        messages=asked,
        user="conv-cancel",
        stream=True,
    )
    partial = ""
    for chunk in leaving:
        partial += (chunk.choices[0].delta.content or "") if chunk.choices else ""
        if partial:
            break
    hangups, requests = anthropic.hangups, len(anthropic.requests)
    leaving.close()  # a frontend's stop button
    assert hung_up(anthropic, hangups + 1)  # the model's request was dropped with the turn
    anthropic.enqueue(
        text_reply("Short answer.", usage=FakeUsage(input_tokens=40, output_tokens=3))
    )
    later: list[ChatCompletionMessageParam] = [
        *asked,
        {"role": "assistant", "content": partial},
        {"role": "user", "content": "just the short version"},
    ]
    # Busy (429, Retry-After: 1) until the cancelled turn has ended; the SDK retries.
    after = list(
        api.with_options(max_retries=5).chat.completions.create(
            model="assistant",
            messages=later,
            user="conv-cancel",
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in after if c.choices)
    assert text == "Short answer."  # nothing of the cancelled answer again
    assert len(anthropic.requests) == requests + 1  # the cancelled turn was not retried
    usage = after[-1].usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens) == (40, 3)  # this turn's only
