"""A local fake of an OpenAI-compatible server (Chat Completions, streamed), for tests.

Like :class:`tests.fakes.anthropic_api.AnthropicFake` it is an HTTP/1.1 server on
``127.0.0.1`` with its own event loop in a thread. Point the real ``openai.AsyncOpenAI``
(or our provider) at ``fake.base_url`` (it ends in ``/v1``)::

    with OpenAIFake() as fake:                      # the hosted API's behaviour
        fake.enqueue(reply(text("Hel", "lo")))
        fake.enqueue(reply(text("Let me look."), tool_call("t__echo", {"n": 1})))
        fake.enqueue(api_error(429), server_error(503), drop_mid_stream("partial"))
        fake.requests[0].body["messages"]        # what the SDK sent

    with OpenAIFake(dialect=OLLAMA, model=FakeModel(context_window=40960)) as fake: ...

Every ``POST /v1/chat/completions`` goes through :func:`tests.fakes.openai_rules.check_request`
first: a body the real API refuses gets ``400`` with its wording, ``param`` and ``code``
(no reply is consumed), and fails the test on ``__exit__`` unless
:meth:`OpenAIFake.expect_refusals` was called. A prompt longer than the model's window is
refused as the dialect's server refuses it (OpenAI's and vLLM's ``context_length_exceeded``,
llama.cpp's ``exceed_context_size_error``; Ollama truncates silently); those are listed in
:attr:`OpenAIFake.overflows`, not counted as refusals (a product meets them honestly).

Dialects differ the way the servers do (:class:`Dialect`): whether a usage chunk comes
when ``stream_options.include_usage`` asks for one, the ``finish_reason`` after tool
calls, whether tool-call ids are sent (and unique), whether arguments arrive in
fragments, and where the context window is published (Ollama's ``POST /api/show``,
vLLM's ``max_model_len`` in ``GET /v1/models``, llama.cpp's ``GET /props``).
Every scripted error text contains :data:`RAW_ERROR_MARKER` (it must never reach a user).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tests.fakes.anthropic_api import (
    RAW_ERROR_MARKER,
    FakeUsage,
    TextOut,
    ToolUseOut,
    text,
)
from tests.fakes.loopback_http import LoopbackServer, RecordedRequest, head, json_response
from tests.fakes.openai_rules import Problem, check_request
from tests.fakes.openai_stream import (
    LLAMACPP,
    OLLAMA,
    OPENAI,
    VLLM,
    Chunk,
    Dialect,
    Done,
    ErrorReply,
    FakeModel,
    Reply,
    ReplyFactory,
    Script,
    Step,
    StreamReply,
    api_error,
    drop_mid_stream,
    error_mid_stream,
    hang_mid_stream,
    prompt_tokens,
    reply,
    server_error,
    stream_steps,
    tool_call,
)

__all__ = [
    "LLAMACPP",
    "OLLAMA",
    "OPENAI",
    "RAW_ERROR_MARKER",
    "VLLM",
    "Dialect",
    "FakeModel",
    "FakeUsage",
    "OpenAIFake",
    "TextOut",
    "ToolUseOut",
    "api_error",
    "drop_mid_stream",
    "error_mid_stream",
    "hang_mid_stream",
    "reply",
    "server_error",
    "text",
    "tool_call",
]

_ids = itertools.count(1)

# --- the server -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Refusal:
    number: int
    problem: Problem


class OpenAIFake(LoopbackServer):
    """See the module docstring. Use as a context manager."""

    name = "OpenAIFake"

    def __init__(
        self,
        *,
        dialect: Dialect = OPENAI,
        model: FakeModel | None = None,
        api_key: str | None = None,
    ) -> None:
        self.dialect = dialect
        self.model = model or FakeModel()
        self.api_key = api_key
        """When set, a request without ``Authorization: Bearer <api_key>`` gets 401."""
        super().__init__()
        self._queue: deque[Reply | ReplyFactory] = deque()
        self._standing: list[tuple[Callable[[RecordedRequest], bool], Reply]] = []
        self._requests: list[RecordedRequest] = []
        self._failures: list[str] = []
        self._refusals: list[Refusal] = []
        self._overflows: list[int] = []
        self._tool_refusals = 0
        self._refusals_expected = False

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def completions(self) -> list[RecordedRequest]:
        """The chat completion requests only (not discovery)."""
        return [r for r in self.requests if r.path.startswith("/v1/chat/completions")]

    @property
    def refusals(self) -> list[Refusal]:
        with self._lock:
            return list(self._refusals)

    @property
    def overflows(self) -> list[int]:
        """The prompt sizes (tokens) the fake refused as too long for the window."""
        with self._lock:
            return list(self._overflows)

    @property
    def tool_refusals(self) -> int:
        """Requests refused for a feature the model lacks (``FakeModel.tools``, or
        ``max_tokens`` on a ``completion_tokens_only`` model): the product asks again."""
        with self._lock:
            return self._tool_refusals

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def expect_refusals(self) -> None:
        with self._lock:
            self._refusals_expected = True

    def discard_pending(self) -> int:
        with self._lock:
            dropped = len(self._queue)
            self._queue.clear()
            return dropped

    def answer_always(self, matches: Callable[[RecordedRequest], bool], answer: Reply) -> None:
        """Answer every request ``matches`` accepts with ``answer``, outside the queue
        (e.g. the summary calls compaction makes at moments a scenario does not plan)."""
        with self._lock:
            self._standing.append((matches, answer))

    def enqueue(self, *replies: Reply | ReplyFactory) -> None:
        with self._lock:
            self._queue.extend(replies)

    # -- internals --

    def _record_failure(self, failure: str) -> None:
        self._failures.append(failure)

    def _exit_failures(self) -> list[str]:
        failures = list(self._failures)
        if not self._refusals_expected:
            failures += [
                f"request #{r.number} was refused as the real API would refuse it: "
                f"{r.problem.message}"
                for r in self._refusals
            ]
        return failures

    def _discovery(self, request: RecordedRequest) -> tuple[int, Any] | None:
        path, name = request.path.split("?")[0], self.model.name
        kind = self.dialect.discovery
        if request.method == "GET" and path == "/v1/models":
            entry: dict[str, Any] = {"id": name, "object": "model", "owned_by": "fake"}
            if kind == "vllm":
                entry["max_model_len"] = self.model.context_window
            return 200, {"object": "list", "data": [entry]}
        if kind == "ollama" and request.method == "POST" and path == "/api/show":
            arch = "qwen3"
            info = {
                "general.architecture": arch,
                f"{arch}.context_length": self.model.context_window,
            }
            return 200, {"model_info": info, "capabilities": ["completion", "tools"]}
        if kind == "llamacpp" and request.method == "GET" and path == "/props":
            settings = {"n_ctx": self.model.context_window}
            return 200, {"default_generation_settings": settings, "total_slots": 1}
        return None

    def _overflow(self, body: Mapping[str, Any]) -> ErrorReply | None:
        window = self.model.context_window
        prompt = prompt_tokens(body)
        completion = int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
        if self.dialect.overflow == "truncate" or prompt + completion <= window:
            return None
        with self._lock:
            self._overflows.append(prompt)
        if self.dialect.overflow == "llamacpp":
            return ErrorReply(
                400,
                "the request exceeds the available context size, try increasing it",
                "exceed_context_size_error",
            )
        message = (
            f"This model's maximum context length is {window} tokens. However, you requested "
            f"{prompt + completion} tokens ({prompt} in the messages, {completion} in the "
            "completion). Please reduce the length of the messages or completion."
        )
        return ErrorReply(400, message, code="context_length_exceeded", param="messages")

    def _next_reply(self, request: RecordedRequest) -> Reply | tuple[int, Any] | str:
        found = self._discovery(request)
        with self._lock:
            number = len(self._requests)
            self._requests.append(request)
        if found is not None:
            return found
        where = f"request #{number} ({request.method} {request.path})"
        if request.method != "POST" or request.path.split("?")[0] != "/v1/chat/completions":
            return 404, {"error": {"message": f"Not found: {request.path}", "type": "not_found"}}
        if (
            self.api_key is not None
            and request.headers.get("authorization") != f"Bearer {self.api_key}"
        ):
            return ErrorReply(401, "Incorrect API key provided.", code="invalid_api_key")
        problem = check_request(
            request.body, max_completion_tokens=self.model.max_completion_tokens
        )
        if problem is None and request.body.get("model") != self.model.name:
            message = (
                f"The model `{request.body.get('model')}` does not exist or you do not have "
                "access to it."
            )
            return ErrorReply(404, message, code="model_not_found")
        if problem is None and not self.model.vision and _has_image(request.body):
            problem = Problem("image input is not supported by this model", None, None)
        if problem is not None:
            with self._lock:
                self._refusals.append(Refusal(number, problem))
            return ErrorReply(400, problem.message, code=problem.code, param=problem.param)
        if self.model.completion_tokens_only and "max_tokens" in request.body:
            with self._lock:
                self._tool_refusals += 1
            message = (
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead."
            )
            return ErrorReply(400, message, code="unsupported_parameter", param="max_tokens")
        if not self.model.tools and request.body.get("tools"):
            with self._lock:
                self._tool_refusals += 1
            message = f"registry.ollama.ai/library/{self.model.name} does not support tools"
            return ErrorReply(400, message, "api_error")
        overflow = self._overflow(request.body)
        if overflow is not None:
            return overflow
        if request.body.get("stream") is not True:
            return f"{where}: the fake only answers stream=true"
        with self._lock:
            standing = [answer for matches, answer in self._standing if matches(request)]
            item = standing[0] if standing else self._queue.popleft() if self._queue else None
        if item is None:
            return f"{where}: no reply queued"
        if isinstance(item, Script | StreamReply | ErrorReply):
            return item
        try:
            return item(request)
        except Exception as err:
            return f"{where}: reply function raised {err!r}"

    async def _respond(
        self, request: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        answer = self._next_reply(request)
        if isinstance(answer, str):
            with self._lock:
                self._failures.append(answer)
            answer = ErrorReply(
                500, f"OpenAIFake: {answer}", "server_error", headers={"x-should-retry": "false"}
            )
        if isinstance(answer, tuple):
            status, payload = answer
            return await json_response(writer, status, payload)
        if isinstance(answer, ErrorReply):
            error = {
                "message": answer.message,
                "type": answer.type,
                "param": answer.param,
                "code": answer.code,
            }
            extra = list(answer.headers.items())
            return await json_response(writer, answer.status, {"error": error}, extra)
        options = request.body.get("stream_options") or {}
        include = bool(options.get("include_usage"))
        steps = (
            stream_steps(answer, self.dialect, include)
            if isinstance(answer, Script)
            else list(answer.steps)
        )
        return await self._stream(writer, reader, steps, request, include)

    async def _stream(
        self,
        writer: asyncio.StreamWriter,
        reader: asyncio.StreamReader,
        steps: list[Step],
        request: RecordedRequest,
        include_usage: bool,
    ) -> bool:
        headers = [("content-type", "text/event-stream"), ("transfer-encoding", "chunked")]
        writer.write(head(200, headers))
        completion = f"chatcmpl-fake{next(_ids)}"

        def encode(step: Chunk | Done) -> bytes:
            if isinstance(step, Done):
                return b"data: [DONE]\n\n"
            data = dict(step.data)
            if "error" not in data:
                data = {
                    "id": completion,
                    "object": "chat.completion.chunk",
                    "created": 1_700_000_000,
                    "model": request.body.get("model"),
                    "system_fingerprint": "fp_fake",
                    **({"usage": None} if include_usage and self.dialect.usage_chunk else {}),
                    **data,
                }
            return f"data: {json.dumps(data)}\n\n".encode()

        return await self._play(writer, reader, steps, encode)


def _has_image(body: object) -> bool:
    messages = body.get("messages", []) if isinstance(body, dict) else []
    return any(
        isinstance(part, dict) and part.get("type") == "image_url"
        for message in messages
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for part in message["content"]
    )
