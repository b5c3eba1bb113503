"""The replies of the OpenAI-compatible fake, and how each server dialect streams them.

A :class:`Script` is a reply as blocks (text, tool calls) streamed in the fake's
:class:`Dialect` when sent: a first chunk with the role, ``delta.content`` pieces,
``delta.tool_calls`` fragments by ``index`` (the first with id, type and name, then the
arguments in pieces), a final chunk with ``finish_reason``, and, when
``stream_options.include_usage`` asks for it, a usage chunk with empty ``choices``; then
``data: [DONE]``. :class:`StreamReply` is raw steps; :class:`ErrorReply` an HTTP error
with the API's JSON error body.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from tests.fakes.anthropic_api import (
    RAW_ERROR_MARKER,
    Drop,
    FakeUsage,
    Hang,
    Pause,
    RecordedRequest,
    TextOut,
    ToolUseOut,
    _split,
    text,
)

_ids = itertools.count(1)
CHARS_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str
    usage_chunk: bool = True
    """Honours ``stream_options.include_usage`` with a final usage chunk."""
    usage_on_finish: bool = False
    """Sends usage on the finish chunk instead (llama.cpp), asked or not."""
    tool_finish: str = "tool_calls"
    ids: Literal["unique", "missing", "per_index"] = "unique"
    fragments: bool = True
    overflow: Literal["openai", "llamacpp", "truncate"] = "openai"
    discovery: Literal["none", "ollama", "vllm", "llamacpp"] = "none"


OPENAI = Dialect("openai")
VLLM = Dialect("vllm", discovery="vllm")
OLLAMA = Dialect(
    "ollama",
    usage_chunk=False,
    tool_finish="stop",
    ids="per_index",
    fragments=False,
    overflow="truncate",
    discovery="ollama",
)
LLAMACPP = Dialect(
    "llamacpp",
    usage_chunk=False,
    usage_on_finish=True,
    ids="missing",
    overflow="llamacpp",
    discovery="llamacpp",
)


@dataclass(frozen=True, slots=True)
class FakeModel:
    """The one model the fake serves (another name gets the API's 404)."""

    name: str = "qwen3:8b"
    context_window: int = 128_000
    max_completion_tokens: int = 16_384
    vision: bool = True
    tools: bool = True
    """False: a request offering tools gets Ollama's 400 "... does not support tools"."""
    completion_tokens_only: bool = False
    """True (OpenAI's reasoning models): ``max_tokens`` is refused, ``max_completion_tokens``
    is the field."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """One ``data:`` line (its ``model`` and ids are filled in when sent)."""

    data: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Done:
    """``data: [DONE]``."""


Step = Chunk | Done | Pause | Drop | Hang


@dataclass(frozen=True, slots=True)
class StreamReply:
    steps: tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class ErrorReply:
    status: int
    message: str
    type: str = "invalid_request_error"
    code: str | None = None
    param: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Script:
    """A reply as blocks, streamed in the fake's dialect when it is sent."""

    blocks: tuple[TextOut | ToolUseOut, ...]
    usage: FakeUsage = field(default_factory=FakeUsage)
    finish_reason: str | None = None
    tail: tuple[Step, ...] = ()
    """Steps sent instead of the finish (a drop, a hang, an error chunk)."""


Reply = Script | StreamReply | ErrorReply
ReplyFactory = Callable[[RecordedRequest], Reply]


def reply(
    *blocks: TextOut | ToolUseOut, usage: FakeUsage | None = None, finish_reason: str | None = None
) -> Script:
    return Script(blocks, usage or FakeUsage(), finish_reason)


def tool_call(name: str, arguments: Mapping[str, Any], *, json_chunks: int = 3) -> ToolUseOut:
    return ToolUseOut(name, arguments, f"call_fake_{next(_ids)}", json_chunks)


def api_error(status: int = 429, *, retry_after_ms: int | None = 1) -> ErrorReply:
    kinds = {429: ("requests", "rate_limit_exceeded"), 401: ("invalid_request_error", None)}
    kind, code = kinds.get(status, ("server_error", None))
    headers = {"retry-after-ms": str(retry_after_ms)} if retry_after_ms is not None else {}
    return ErrorReply(
        status, f"{kind} from the fake [{RAW_ERROR_MARKER}]", kind, code, None, headers
    )


def server_error(status: int = 500) -> ErrorReply:
    return api_error(status)


def drop_mid_stream(after_text: str = "partial") -> Script:
    return Script((text(after_text),) if after_text else (), tail=(Drop(),))


def hang_mid_stream(after_text: str = "partial") -> Script:
    return Script((text(after_text),) if after_text else (), tail=(Hang(),))


def error_mid_stream(after_text: str = "partial") -> Script:
    error = {"message": f"mid-stream failure [{RAW_ERROR_MARKER}]", "type": "server_error"}
    return Script((text(after_text),) if after_text else (), tail=(Chunk({"error": error}),))


# --- streaming a script in a dialect ----------------------------------------------------


def _choice(delta: Mapping[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"index": 0, "delta": dict(delta), "logprobs": None, "finish_reason": finish}


def _usage(usage: FakeUsage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_input_tokens},
    }


def _tool_deltas(dialect: Dialect, number: int, call: ToolUseOut) -> list[dict[str, Any]]:
    raw = json.dumps(dict(call.input), separators=(",", ":"))
    head: dict[str, Any] = {"index": number, "type": "function"}
    if dialect.ids == "unique":
        head["id"] = call.id
    elif dialect.ids == "per_index":
        head["id"] = f"call_{number}"
    pieces = _split(raw, call.json_chunks) if dialect.fragments else [raw]
    first = {**head, "function": {"name": call.name, "arguments": "" if dialect.fragments else raw}}
    out = [{"tool_calls": [first]}]
    if dialect.fragments:
        out += [{"tool_calls": [{"index": number, "function": {"arguments": p}}]} for p in pieces]
    return out


def stream_steps(script: Script, dialect: Dialect, include_usage: bool) -> list[Step]:
    with_usage = include_usage and dialect.usage_chunk
    steps: list[Step] = [Chunk({"choices": [_choice({"role": "assistant", "content": ""})]})]
    calls = 0
    for block in script.blocks:
        if isinstance(block, TextOut):
            steps += [Chunk({"choices": [_choice({"content": c})]}) for c in block.chunks]
        else:
            deltas = _tool_deltas(dialect, calls, block)
            steps += [Chunk({"choices": [_choice(d)]}) for d in deltas]
            calls += 1
    if script.tail:
        return steps + list(script.tail)
    finish = script.finish_reason or (dialect.tool_finish if calls else "stop")
    last: dict[str, Any] = {"choices": [_choice({}, finish)]}
    if dialect.usage_on_finish:
        last["usage"] = _usage(script.usage)
    steps.append(Chunk(last))
    if with_usage:
        steps.append(Chunk({"choices": [], "usage": _usage(script.usage)}))
    return [*steps, Done()]


def prompt_tokens(body: Mapping[str, Any]) -> int:
    """What the fake counts as the prompt: every character of the messages and tools."""
    return len(json.dumps(body.get("messages", [])) + json.dumps(body.get("tools", []))) // (
        CHARS_PER_TOKEN
    )
