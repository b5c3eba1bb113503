"""Translation between our types and the Chat Completions API (OpenAI-compatible servers).

Outbound: the system parts become one ``system`` message; tools become ``function``
tools; an assistant message's text and tool calls become one message with
``tool_calls`` (arguments as JSON text); each tool result becomes a ``tool`` message
answering its call id, right after the assistant message; images become ``image_url``
data URIs where the model takes images (a short note where it does not); PDFs become
their extracted text. Tool ids the API would refuse (over 40 characters, or odd
characters, e.g. from another provider) are mapped to a stable short id on both sides.
Inbound: an SDK or transport failure becomes a :class:`ProviderError` with a sentence
of ours; the raw cause is for the log only.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import httpx2
import openai
from pypdf import PdfReader
from pypdf.errors import PyPdfError

from thalos_bot.domain.messages import (
    Block,
    DocumentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from thalos_bot.domain.prompt import SystemPart
from thalos_bot.media.store import StoredMedia
from thalos_bot.providers.base import ProviderError
from thalos_bot.tools.types import ToolSpec

PDF_TEXT_CHARS = 100_000
"""The most text of one PDF sent to a model that reads PDFs as text."""
NOT_STORED = "[{what} sent earlier is no longer stored.]"
NO_VISION = "[An image was sent here; this model cannot see images.]"
PDF_UNREADABLE = "[A PDF{name} was sent here; its text could not be read.]"
_WIRE_ID = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


def wire_id(tool_id: str) -> str:
    """``tool_id`` as the API accepts it: unchanged when it is, else a stable short id."""
    if _WIRE_ID.match(tool_id):
        return tool_id
    return "call_" + hashlib.sha256(tool_id.encode()).hexdigest()[:32]


# --- outbound ------------------------------------------------------------------------


def system_message(parts: Sequence[SystemPart]) -> dict[str, Any] | None:
    """Stable parts first, then per-turn ones, in one system message (None when empty)."""
    stable = [p.text for p in parts if p.cacheable and p.text.strip()]
    volatile = [p.text for p in parts if not p.cacheable and p.text.strip()]
    text = "\n\n".join([*stable, *volatile])
    return {"role": "system", "content": text} if text else None


def tool_params(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    out = []
    for tool in tools:
        schema = dict(tool.input_schema) or {"type": "object", "properties": {}}
        schema.setdefault("type", "object")
        function = {"name": tool.name, "description": tool.description, "parameters": schema}
        out.append({"type": "function", "function": function})
    return out


def pdf_text(data: bytes, limit: int = PDF_TEXT_CHARS) -> str | None:
    """The text of a PDF, capped at ``limit`` characters (None when unreadable)."""
    try:
        reader = PdfReader(io.BytesIO(data))
        pages = []
        size = 0
        for page in reader.pages:
            text = page.extract_text() or ""
            pages.append(text)
            size += len(text)
            if size >= limit:
                break
    except (PyPdfError, ValueError, KeyError, TypeError, OSError):
        return None
    joined = "\n\n".join(p.strip() for p in pages if p.strip())
    return joined[:limit]


def _media_part(
    block: ImageBlock | DocumentBlock, media: Mapping[str, StoredMedia], *, vision: bool
) -> dict[str, Any]:
    stored = media.get(block.media_hash)
    if stored is None:
        what = "An image" if isinstance(block, ImageBlock) else "A document"
        return {"type": "text", "text": NOT_STORED.format(what=what)}
    if isinstance(block, ImageBlock):
        if not vision:
            return {"type": "text", "text": NO_VISION}
        data = base64.b64encode(stored.data).decode("ascii")
        url = f"data:{stored.media_type};base64,{data}"
        return {"type": "image_url", "image_url": {"url": url}}
    text = pdf_text(stored.data)
    label = f" ({block.name})" if block.name else ""
    if not text:
        return {"type": "text", "text": PDF_UNREADABLE.format(name=label)}
    return {"type": "text", "text": f"[The text of the PDF{label}:]\n{text}"}


def _user_parts(
    blocks: Sequence[Block], media: Mapping[str, StoredMedia], *, vision: bool
) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            if block.text:
                parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageBlock | DocumentBlock):
            parts.append(_media_part(block, media, vision=vision))
    return parts


def _assistant(blocks: Sequence[Block]) -> dict[str, Any] | None:
    text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
    calls = [
        {
            "id": wire_id(b.id),
            "type": "function",
            "function": {
                "name": b.name,
                "arguments": json.dumps(dict(b.input), ensure_ascii=False),
            },
        }
        for b in blocks
        if isinstance(b, ToolUseBlock)
    ]
    if not text and not calls:
        return None
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return message


def message_params(
    messages: Sequence[Message],
    media: Mapping[str, StoredMedia] | None = None,
    *,
    vision: bool = True,
) -> list[dict[str, Any]]:
    """History as Chat Completions messages. Tool results come first in a user message
    (that is where they are in ours); each becomes a ``tool`` message, and what else the
    user message holds follows as a ``user`` message."""
    found = media or {}
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            assistant = _assistant(message.content)
            if assistant is not None:
                out.append(assistant)
            continue
        out.extend(
            {"role": "tool", "tool_call_id": wire_id(b.tool_use_id), "content": b.content}
            for b in message.content
            if isinstance(b, ToolResultBlock)
        )
        parts = _user_parts(message.content, found, vision=vision)
        if parts:
            only_text = all(p["type"] == "text" for p in parts)
            content: str | list[dict[str, Any]] = (
                "\n\n".join(p["text"] for p in parts) if only_text else parts
            )
            out.append({"role": "user", "content": content})
    return out


# --- inbound errors --------------------------------------------------------------------

NO_API_KEY = "No API key: set the {env} environment variable."
BAD_API_KEY = "The model server ({name}) rejected the API key. Check {env}."
NEEDS_KEY = "The model server ({name}) wants an API key: set api_key_env for it."
PERMISSION = "The model server ({name}) does not allow this request."
NOT_FOUND = "The model server ({name}) does not know the configured model. Check its name."
RATE_LIMITED = "The model server ({name}) is rate limiting requests. Try again in a moment."
TOO_LONG = "The conversation is too long for the model ({name}). Start a new session with /new."
REJECTED = "The model server ({name}) rejected the request; the details are in the bot's log."
SERVER_ERROR = "The model server ({name}) had an internal error. Try again in a moment."
UNREACHABLE = "Could not reach the model server ({name})."
TIMED_OUT = "The model server ({name}) timed out."
CUT_OFF = "The model's answer was cut off by a connection error."
UNREADABLE = "The model's answer could not be read."
UNAVAILABLE = "The model server ({name}) could not answer."

_OVERFLOW = re.compile(
    r"maximum context length|context length exceeded|context_length_exceeded|"
    r"exceeds? the available context size|exceed_context_size|prompt is too long|"
    r"too many tokens|input is too long|context window",
    re.IGNORECASE,
)
_WINDOW = re.compile(r"maximum context length is (\d+)", re.IGNORECASE)


def _body_text(err: openai.APIStatusError) -> str:
    try:
        return json.dumps(err.body) if err.body is not None else str(err.message)
    except (TypeError, ValueError):
        return str(err.message)


def overflow_window(detail: str, body: object) -> int | None:
    """The window a too-long refusal names (OpenAI/vLLM wording, llama.cpp's ``n_ctx``)."""
    match = _WINDOW.search(detail)
    if match:
        return int(match.group(1))
    if isinstance(body, Mapping):
        n_ctx = body.get("n_ctx")
        error = body.get("error")
        if n_ctx is None and isinstance(error, Mapping):
            n_ctx = error.get("n_ctx")
        if isinstance(n_ctx, int) and n_ctx > 0:
            return n_ctx
    return None


def _status_error(err: openai.APIStatusError, name: str, env: str | None) -> ProviderError:
    status = err.status_code
    detail = _body_text(err)
    if status in (400, 413, 422) and _OVERFLOW.search(detail):
        window = overflow_window(detail, err.body)
        return ProviderError(TOO_LONG.format(name=name), too_long=True, window=window)
    if status == 401:
        message = BAD_API_KEY.format(name=name, env=env) if env else NEEDS_KEY.format(name=name)
        return ProviderError(message)
    if status == 403:
        return ProviderError(PERMISSION.format(name=name))
    if status == 404:
        return ProviderError(NOT_FOUND.format(name=name))
    if status == 429:
        return ProviderError(RATE_LIMITED.format(name=name), retryable=True, fallback=True)
    if status >= 500:
        return ProviderError(SERVER_ERROR.format(name=name), retryable=True, fallback=True)
    return ProviderError(REJECTED.format(name=name))


def provider_error(err: BaseException, name: str, env: str | None) -> ProviderError:
    """Our sentence for a failed call. Never carries text from ``err``."""
    if isinstance(err, ProviderError):
        return err
    if isinstance(err, openai.APITimeoutError | httpx2.TimeoutException):
        return ProviderError(TIMED_OUT.format(name=name), retryable=True, fallback=True)
    if isinstance(err, openai.APIConnectionError):
        return ProviderError(UNREACHABLE.format(name=name), retryable=True, fallback=True)
    if isinstance(err, openai.APIStatusError):
        return _status_error(err, name, env)
    if isinstance(err, openai.APIError):  # an error chunk inside a 200 stream
        return ProviderError(SERVER_ERROR.format(name=name), retryable=True, fallback=True)
    if isinstance(err, httpx2.HTTPError):
        return ProviderError(CUT_OFF, retryable=True, fallback=True)
    if isinstance(err, json.JSONDecodeError):
        return ProviderError(UNREADABLE, retryable=True)
    return ProviderError(UNAVAILABLE.format(name=name))
