"""A local fake of Anthropic's streamed Messages API, for tests.

The fake is a tiny HTTP/1.1 server on ``127.0.0.1`` (ephemeral port) running its own
event loop in a background thread, so any test can use it whatever loop it runs on.
Point the real ``anthropic.AsyncAnthropic`` (or our provider) at ``fake.base_url``.

Replies are queued and consumed in order, one per request (SDK retries consume further
replies). An empty queue answers ``500`` with ``x-should-retry: false`` and makes
``__exit__`` fail the test::

    with AnthropicFake() as fake:
        fake.enqueue(text_reply("Hello", " world"))
        fake.enqueue(tool_use_reply("memory__recall", {"q": "cats"}, text_before="Let me check."))
        fake.enqueue(overloaded())                # HTTP 529, retry-after-ms: 1
        fake.enqueue(error_mid_stream())          # SSE `event: error` after some text
        fake.enqueue(drop_mid_stream())           # TCP connection closed mid-stream
        fake.enqueue(hang_mid_stream())           # stalls until the client goes away
        fake.enqueue(lambda req: text_reply("You said: " + req.last_user_text))
        fake.enqueue(reply(text("a", "b"), tool_use("x__y", {}), tool_use("x__z", {"n": 1})))
        ...
        fake.requests[0].body["system"]           # what the SDK sent (parsed JSON)
        fake.requests[0].headers["authorization"] # lower-case names; SDK 2.x sends Bearer
        await fake.wait_for_hangup()              # a hung reply saw its client leave

The fake is as strict as the real API: every ``POST /v1/messages`` body goes through
:func:`tests.fakes.anthropic_rules.check_request` first, and a body the real API would
refuse gets ``400 invalid_request_error`` with the API's own wording (no reply is consumed
for it); a body over 32 MB gets the edge's ``413 request_too_large``. A refusal fails the
test on ``__exit__``, naming the request and the reason, unless the test said it expects
refusals (:meth:`AnthropicFake.expect_refusals`; then :attr:`AnthropicFake.refusals`
lists them)::

    with AnthropicFake() as fake:
        fake.expect_refusals()
        ...                                       # send an invalid request
        assert "non-whitespace" in fake.refusals[0].message

``fake.discard_pending()`` drops replies a cancelled turn never asked for.

Any other shape is a :class:`StreamReply` of steps: ``event(kind, **fields)`` (one SSE
event), :class:`Pause`, :class:`Drop`, :class:`Hang`; or an :class:`ErrorReply` made by
``api_error(status, error_type)``. Every scripted error text the fake sends contains
:data:`RAW_ERROR_MARKER`, so a test can assert that raw provider text never reaches a
user (a refusal carries the real API's wording instead). ``message_start`` carries the
request's ``model``; usage numbers come from :class:`FakeUsage`. Retryable errors carry
``retry-after-ms: 1`` so SDK retries are quick (the SDK ignores a value of 0 and would
back off for about half a second).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.anthropic_rules import check_request, check_size
from tests.fakes.loopback_http import (
    Drop,
    Hang,
    LoopbackServer,
    Pause,
    RecordedRequest,
    head,
    json_response,
)

__all__ = [
    "RAW_ERROR_MARKER",
    "AnthropicFake",
    "Drop",
    "ErrorReply",
    "Event",
    "FakeUsage",
    "Hang",
    "Pause",
    "RecordedRequest",
    "Refusal",
    "Reply",
    "ReplyFactory",
    "Step",
    "StreamReply",
    "TextOut",
    "ToolUseOut",
    "api_error",
    "drop_mid_stream",
    "error_mid_stream",
    "event",
    "hang_mid_stream",
    "overloaded",
    "reply",
    "text",
    "text_reply",
    "tool_use",
    "tool_use_reply",
]

RAW_ERROR_MARKER = "FAKE-UPSTREAM-DETAIL-7f3a"
"""Appears in every error text the fake sends; must never reach a user."""

_ids = itertools.count(1)


# --- what the fake records ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request the fake refused as the real API would (HTTP 400, or 413 for a body
    over the size limit)."""

    number: int
    """The request's position in :attr:`AnthropicFake.requests`."""
    message: str
    """The API's error message."""
    status: int = 400


# --- scripted replies ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FakeUsage:
    input_tokens: int = 12
    output_tokens: int = 7
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Event:
    """One server-sent event: ``event: {data["type"]}`` and ``data: {json}``."""

    data: Mapping[str, Any]

    @property
    def name(self) -> str:
        return str(self.data["type"])


def event(kind: str, **fields: Any) -> Event:
    """``event("content_block_stop", index=0)`` and the like."""
    return Event({"type": kind, **fields})


Step = Event | Pause | Drop | Hang


@dataclass(frozen=True, slots=True)
class StreamReply:
    """``200 text/event-stream`` with these steps."""

    steps: tuple[Step, ...]
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """An HTTP error with Anthropic's JSON error body."""

    status: int
    error_type: str
    message: str
    headers: Mapping[str, str] = field(default_factory=dict)


Reply = StreamReply | ErrorReply
ReplyFactory = Callable[[RecordedRequest], Reply]


@dataclass(frozen=True, slots=True)
class TextOut:
    chunks: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ToolUseOut:
    name: str
    input: Mapping[str, Any]
    id: str
    json_chunks: int = 3


def text(*chunks: str) -> TextOut:
    """A text block streamed as these deltas."""
    return TextOut(chunks)


def tool_use(
    name: str,
    tool_input: Mapping[str, Any],
    *,
    id: str | None = None,  # noqa: A002 - the API's field name
    json_chunks: int = 3,
) -> ToolUseOut:
    """A tool_use block whose input JSON arrives in ``json_chunks`` pieces."""
    return ToolUseOut(name, tool_input, id or f"toolu_fake_{next(_ids)}", json_chunks)


def _split(raw: str, parts: int) -> list[str]:
    parts = max(1, min(parts, len(raw)))
    size = -(-len(raw) // parts)
    return [raw[i : i + size] for i in range(0, len(raw), size)]


def _usage_json(usage: FakeUsage, output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "output_tokens": output_tokens,
    }


def _message_start(usage: FakeUsage) -> Event:
    message: dict[str, Any] = {
        "id": f"msg_fake_{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "model": None,  # filled with the request's model when sent
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _usage_json(usage, 1),
    }
    return event("message_start", message=message)


def _block_steps(index: int, block: TextOut | ToolUseOut, delay: float) -> list[Step]:
    if isinstance(block, TextOut):
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": c} for c in block.chunks]
    else:
        start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
        raw = json.dumps(dict(block.input), separators=(",", ":"))
        pieces = _split(raw, block.json_chunks)
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
    steps: list[Step] = [event("content_block_start", index=index, content_block=start)]
    for delta in deltas:
        if delay > 0:
            steps.append(Pause(delay))
        steps.append(event("content_block_delta", index=index, delta=delta))
    steps.append(event("content_block_stop", index=index))
    return steps


def reply(
    *blocks: TextOut | ToolUseOut,
    stop_reason: str | None = None,
    usage: FakeUsage | None = None,
    chunk_delay: float = 0.0,
) -> StreamReply:
    """A complete streamed message with these blocks, in order. ``stop_reason``
    defaults to ``tool_use`` when a tool is called, else ``end_turn``."""
    usage = usage or FakeUsage()
    if stop_reason is None:
        has_tool = any(isinstance(b, ToolUseOut) for b in blocks)
        stop_reason = "tool_use" if has_tool else "end_turn"
    steps: list[Step] = [_message_start(usage), event("ping")]
    for index, block in enumerate(blocks):
        steps.extend(_block_steps(index, block, chunk_delay))
    delta = {"stop_reason": stop_reason, "stop_sequence": None}
    steps.append(event("message_delta", delta=delta, usage=_usage_json(usage, usage.output_tokens)))
    steps.append(event("message_stop"))
    return StreamReply(tuple(steps))


def text_reply(
    *chunks: str,
    chunk_delay: float = 0.0,
    usage: FakeUsage | None = None,
    stop_reason: str = "end_turn",
) -> StreamReply:
    """One text block streamed as ``chunks``."""
    return reply(text(*chunks), stop_reason=stop_reason, usage=usage, chunk_delay=chunk_delay)


def tool_use_reply(
    name: str,
    tool_input: Mapping[str, Any],
    *,
    id: str = "toolu_fake_1",  # noqa: A002 - the API's field name
    json_chunks: int = 3,
    text_before: str | None = None,
    usage: FakeUsage | None = None,
) -> StreamReply:
    """An optional text block, then one tool call; ``stop_reason`` is ``tool_use``."""
    call = tool_use(name, tool_input, id=id, json_chunks=json_chunks)
    blocks = (text(text_before), call) if text_before else (call,)
    return reply(*blocks, usage=usage)


def api_error(
    status: int,
    error_type: str,
    *,
    retry_after_ms: int | None = 1,
    headers: Mapping[str, str] | None = None,
) -> ErrorReply:
    """An HTTP error; ``retry-after-ms`` keeps SDK retries fast (0 is ignored by the SDK)."""
    extra = dict(headers or {})
    if retry_after_ms is not None:
        extra.setdefault("retry-after-ms", str(retry_after_ms))
    return ErrorReply(status, error_type, f"{error_type} from the fake [{RAW_ERROR_MARKER}]", extra)


def overloaded(status: int = 529, *, retry_after_ms: int | None = 1) -> ErrorReply:
    return api_error(status, "overloaded_error", retry_after_ms=retry_after_ms)


def _partial(after_text: str) -> list[Step]:
    steps: list[Step] = [_message_start(FakeUsage())]
    if after_text:
        steps.extend(_block_steps(0, text(after_text), 0.0)[:-1])  # the block never stops
    return steps


def error_mid_stream(
    after_text: str = "partial", *, error_type: str = "overloaded_error"
) -> StreamReply:
    """Some text, then ``event: error``, then the response ends."""
    detail = {"type": error_type, "message": f"{error_type} mid-stream [{RAW_ERROR_MARKER}]"}
    return StreamReply((*_partial(after_text), event("error", error=detail)))


def drop_mid_stream(after_text: str = "partial") -> StreamReply:
    """Some text, then the TCP connection closes mid-body."""
    return StreamReply((*_partial(after_text), Drop()))


def hang_mid_stream(after_text: str = "partial") -> StreamReply:
    """Some text, then silence until the client goes away (counted in ``hangups``)."""
    return StreamReply((*_partial(after_text), Hang()))


# --- the server ------------------------------------------------------------------------


class AnthropicFake(LoopbackServer):
    """The fake server. Use as a context manager; see the module docstring."""

    name = "AnthropicFake"

    def __init__(self) -> None:
        super().__init__()
        self._queue: deque[Reply | ReplyFactory] = deque()
        self._requests: list[RecordedRequest] = []
        self._failures: list[str] = []
        self._refusals: list[Refusal] = []
        self._refusals_expected = False

    # -- public API --

    @property
    def base_url(self) -> str:
        return self.root_url

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def pending(self) -> int:
        """Replies queued and not yet consumed."""
        with self._lock:
            return len(self._queue)

    @property
    def refusals(self) -> list[Refusal]:
        """Requests refused as invalid, in order (a copy)."""
        with self._lock:
            return list(self._refusals)

    def expect_refusals(self) -> None:
        """This test sends invalid requests on purpose: refusals do not fail it."""
        with self._lock:
            self._refusals_expected = True

    def discard_pending(self) -> int:
        """Drop the replies still queued (a cancelled turn never asked for them)."""
        with self._lock:
            dropped = len(self._queue)
            self._queue.clear()
            return dropped

    def enqueue(self, *replies: Reply | ReplyFactory) -> None:
        """Queue replies, each answering one future request, in order."""
        with self._lock:
            self._queue.extend(replies)

    # -- server internals --

    def _record_failure(self, failure: str) -> None:
        self._failures.append(failure)

    def _exit_failures(self) -> list[str]:
        failures, self._failures = self._failures, []
        if not self._refusals_expected:
            failures += [
                f"request #{r.number} was refused as the real API would refuse it: {r.message}"
                for r in self._refusals
            ]
        return failures

    def _next_reply(self, request: RecordedRequest) -> Reply | str:
        """The reply for ``request``, or a failure text."""
        served = request.method == "POST" and request.path.split("?")[0] == "/v1/messages"
        too_large = check_size(request.size) if served else None
        problem = check_request(request.body) if served and too_large is None else None
        with self._lock:
            number = len(self._requests)
            self._requests.append(request)
            if too_large is not None:
                self._refusals.append(Refusal(number, too_large, 413))
                return ErrorReply(413, "request_too_large", too_large)
            if problem is not None:
                self._refusals.append(Refusal(number, problem))
                return ErrorReply(400, "invalid_request_error", problem)
            item = self._queue.popleft() if self._queue else None
        where = f"request #{number} ({request.method} {request.path})"
        if not served:
            return f"{where}: the fake only serves POST /v1/messages"
        if not isinstance(request.body, dict) or request.body.get("stream") is not True:
            return f"{where}: the fake only answers stream=true"
        if item is None:
            return f"{where}: no reply queued"
        if isinstance(item, StreamReply | ErrorReply):
            return item
        try:
            return item(request)
        except Exception as err:
            return f"{where}: reply function raised {err!r}"

    async def _respond(
        self, request: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Answer one request; False when the connection must close."""
        answer = self._next_reply(request)
        request_id = f"req_fake_{next(_ids)}"
        if isinstance(answer, str):
            with self._lock:
                self._failures.append(answer)
            answer = ErrorReply(
                500, "api_error", f"AnthropicFake: {answer}", {"x-should-retry": "false"}
            )
        if isinstance(answer, ErrorReply):
            payload = {
                "type": "error",
                "error": {"type": answer.error_type, "message": answer.message},
                "request_id": request_id,
            }
            extra = [("request-id", request_id), *answer.headers.items()]
            return await json_response(writer, answer.status, payload, extra)
        headers = [
            ("content-type", "text/event-stream; charset=utf-8"),
            ("cache-control", "no-cache"),
            ("transfer-encoding", "chunked"),
            ("request-id", request_id),
            *answer.headers.items(),
        ]
        writer.write(head(200, headers))
        return await self._play(writer, reader, answer.steps, lambda e: self._encode(e, request))

    @staticmethod
    def _encode(step: Event, request: RecordedRequest) -> bytes:
        data = dict(step.data)
        if step.name == "message_start":
            data["message"] = {**data["message"], "model": request.body.get("model")}
        return f"event: {step.name}\ndata: {json.dumps(data)}\n\n".encode()
