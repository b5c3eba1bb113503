"""The Anthropic fake's own contract: wire format, recording, loud failures."""

from __future__ import annotations

import json
import threading

import anthropic
import anyio
import httpx2
import pytest

from tests.fakes.anthropic_api import (
    AnthropicFake,
    RecordedRequest,
    Reply,
    ReplyFactory,
    hang_mid_stream,
    text_reply,
)

pytestmark = pytest.mark.anyio

BODY = {
    "model": "claude-sonnet-5-5",
    "max_tokens": 16,
    "stream": True,
    "messages": [{"role": "user", "content": [{"type": "text", "text": "hello there"}]}],
}


async def test_streams_server_sent_events_and_records_the_request() -> None:
    with AnthropicFake() as fake:
        fake.enqueue(text_reply("Hi", "!"))
        async with httpx2.AsyncClient(base_url=fake.base_url) as client:
            response = await client.post("/v1/messages", json=BODY, headers={"x-test": "1"})

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    names = [line[7:] for line in response.text.splitlines() if line.startswith("event: ")]
    assert names == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert '"model": "claude-sonnet-5-5"' in response.text
    (recorded,) = fake.requests
    assert recorded.body == BODY
    assert recorded.headers["x-test"] == "1"
    assert recorded.last_user_text == "hello there"
    assert fake.pending == 0


async def _call_sdk(fake: AnthropicFake) -> None:
    client = anthropic.AsyncAnthropic(api_key="sk-test", base_url=fake.base_url, max_retries=2)
    with pytest.raises(anthropic.InternalServerError):
        await client.messages.create(
            model="claude-sonnet-5-5",
            max_tokens=16,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
        )
    await client.close()


async def _post(fake: AnthropicFake, *replies: Reply | ReplyFactory) -> None:
    fake.enqueue(*replies)
    async with httpx2.AsyncClient(base_url=fake.base_url) as client:
        response = await client.post("/v1/messages", json=BODY)
    assert response.status_code == 500


async def test_an_unqueued_request_fails_loudly_and_is_not_retried() -> None:
    with pytest.raises(AssertionError, match="no reply queued"), AnthropicFake() as fake:
        await _call_sdk(fake)
    assert len(fake.requests) == 1


async def test_a_failing_reply_function_fails_the_test() -> None:
    def broken(request: RecordedRequest) -> Reply:
        raise ValueError("scripted assertion")

    with pytest.raises(AssertionError, match="scripted assertion"), AnthropicFake() as fake:
        await _post(fake, broken)


async def test_a_client_leaving_before_the_hang_is_reached_is_a_hangup() -> None:
    # A client that stops at the first event may close while the fake is still writing
    # the events ahead of the hang; wait_for_hangup must see that departure too.
    left = threading.Event()

    def after_the_client_left(request: RecordedRequest) -> Reply:
        left.wait(5)  # the server thread writes the reply only once the client is gone
        return hang_mid_stream("more to come")

    body = json.dumps(BODY).encode()
    head = f"POST /v1/messages HTTP/1.1\r\nhost: fake\r\ncontent-length: {len(body)}\r\n\r\n"
    with AnthropicFake() as fake:
        fake.enqueue(after_the_client_left)
        port = int(fake.base_url.rsplit(":", 1)[1])
        client = await anyio.connect_tcp("127.0.0.1", port)
        await client.send(head.encode() + body)
        await client.aclose()
        left.set()
        assert await fake.wait_for_hangup()
    assert fake.hangups == 1
