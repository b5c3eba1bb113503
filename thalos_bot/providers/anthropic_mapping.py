"""Translation between our types and Anthropic's Messages API.

Outbound: system parts, tools and history become the SDK's request params, with prompt
caching breakpoints. Inbound: an SDK or transport failure becomes a
:class:`ProviderError` with a sentence of ours; the raw cause is for the log only.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping, Sequence
from typing import Literal, cast

import anthropic
import httpx2
from anthropic.types import (
    AssistantMessageParam,
    Base64ImageSourceParam,
    Base64PDFSourceParam,
    CacheControlEphemeralParam,
    DocumentBlockParam,
    ImageBlockParam,
    MessageParam,
    TextBlockParam,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
    UserMessageParam,
)

from thalos_bot.domain.messages import (
    Block,
    DocumentBlock,
    ImageBlock,
    Message,
    TextBlock,
    block_to_json,
)
from thalos_bot.domain.prompt import SystemPart
from thalos_bot.media.store import StoredMedia
from thalos_bot.providers.base import ProviderError
from thalos_bot.tools.types import ToolSpec

ENV_API_KEY = "ANTHROPIC_API_KEY"

NO_API_KEY = (
    f"No API key: set the {ENV_API_KEY} environment variable, "
    "or run `thalos-bot chat --offline` to try the echo model."
)
BAD_API_KEY = f"The Anthropic API rejected the API key. Check {ENV_API_KEY}."
PERMISSION = "The Anthropic API key is not allowed to make this request."
NOT_FOUND = "The Anthropic API does not know the configured model. Check the agent's model name."
RATE_LIMITED = "Claude's rate limit was reached. Try again in a moment."
OVERLOADED = "Claude is overloaded right now. Try again in a moment."
TOO_LARGE = "The conversation is too large for the model. Start a new session."
REJECTED = "The Anthropic API rejected the request; the details are in the bot's log."
SERVER_ERROR = "The Anthropic API had an internal error. Try again in a moment."
UNREACHABLE = "Could not reach the Anthropic API."
TIMED_OUT = "The Anthropic API timed out."
CUT_OFF = "The model's answer was cut off by a connection error."
UNREADABLE = "The model's answer could not be read."
UNAVAILABLE = "The Anthropic API could not answer."

_EPHEMERAL: CacheControlEphemeralParam = {"type": "ephemeral"}


# --- outbound ------------------------------------------------------------------------


def system_params(parts: Sequence[SystemPart], *, caching: bool) -> list[TextBlockParam]:
    """Stable parts first, then per-turn ones; a cache breakpoint ends the stable ones.

    The order within each group is kept. Empty and whitespace-only parts are dropped (the
    API rejects them).
    """
    stable = [p for p in parts if p.cacheable and p.text.strip()]
    volatile = [p for p in parts if not p.cacheable and p.text.strip()]
    out: list[TextBlockParam] = [{"type": "text", "text": p.text} for p in (*stable, *volatile)]
    if caching and stable:
        out[len(stable) - 1]["cache_control"] = _EPHEMERAL
    return out


def tool_params(tools: Sequence[ToolSpec], *, caching: bool) -> list[ToolParam]:
    """Tool definitions in order; a cache breakpoint on the last one."""
    out: list[ToolParam] = [
        {"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
        for t in tools
    ]
    if caching and out:
        out[-1]["cache_control"] = _EPHEMERAL
    return out


_ContentParam = (
    TextBlockParam | ToolUseBlockParam | ToolResultBlockParam | ImageBlockParam | DocumentBlockParam
)

NOT_STORED = "[{what} sent earlier is no longer stored.]"


def _media_param(
    block: ImageBlock | DocumentBlock, media: Mapping[str, StoredMedia]
) -> _ContentParam:
    stored = media.get(block.media_hash)
    if stored is None:
        what = "An image" if isinstance(block, ImageBlock) else "A document"
        return {"type": "text", "text": NOT_STORED.format(what=what)}
    data = base64.b64encode(stored.data).decode("ascii")
    if isinstance(block, ImageBlock):
        image: Base64ImageSourceParam = {
            "type": "base64",
            "media_type": cast("Literal['image/jpeg']", stored.media_type),
            "data": data,
        }
        return {"type": "image", "source": image}
    pdf: Base64PDFSourceParam = {"type": "base64", "media_type": "application/pdf", "data": data}
    document: DocumentBlockParam = {"type": "document", "source": pdf}
    if block.name:
        document["title"] = block.name
    return document


def _block_param(block: Block, media: Mapping[str, StoredMedia]) -> _ContentParam:
    if isinstance(block, ImageBlock | DocumentBlock):
        return _media_param(block, media)
    # The stored JSON form of the other blocks is, by design, the API's own block shape.
    return cast("_ContentParam", block_to_json(block))


def message_params(
    messages: Sequence[Message], media: Mapping[str, StoredMedia] | None = None
) -> list[MessageParam]:
    """History as API messages, media resolved from ``media`` (by hash; one no longer
    stored becomes a short note). Empty text blocks, and messages left with no content,
    are dropped: the API rejects both."""
    found = media or {}
    out: list[MessageParam] = []
    for message in messages:
        content = [
            _block_param(b, found)
            for b in message.content
            if not (isinstance(b, TextBlock) and not b.text)
        ]
        if not content:
            continue
        if message.role == "user":
            user: UserMessageParam = {"role": "user", "content": content}
            out.append(user)
        else:
            assistant: AssistantMessageParam = {"role": "assistant", "content": content}
            out.append(assistant)
    return out


# --- inbound errors --------------------------------------------------------------------

_Kind = Literal[
    "auth", "permission", "not_found", "rate", "overloaded", "too_large", "invalid", "server"
]

_BY_TYPE: dict[str, _Kind] = {
    "authentication_error": "auth",
    "permission_error": "permission",
    "not_found_error": "not_found",
    "rate_limit_error": "rate",
    "overloaded_error": "overloaded",
    "request_too_large": "too_large",
    "invalid_request_error": "invalid",
    "api_error": "server",
    "timeout_error": "server",
}

_BY_STATUS: dict[int, _Kind] = {
    400: "invalid",
    401: "auth",
    403: "permission",
    404: "not_found",
    413: "too_large",
    422: "invalid",
    429: "rate",
    529: "overloaded",
}

_MESSAGES: dict[_Kind, tuple[str, bool]] = {
    "auth": (BAD_API_KEY, False),
    "permission": (PERMISSION, False),
    "not_found": (NOT_FOUND, False),
    "rate": (RATE_LIMITED, True),
    "overloaded": (OVERLOADED, True),
    "too_large": (TOO_LARGE, False),
    "invalid": (REJECTED, False),
    "server": (SERVER_ERROR, True),
}


_FALLBACK: frozenset[_Kind] = frozenset({"rate", "overloaded", "server"})
_PROMPT_TOO_LONG = re.compile(r"prompt is too long(?:: \d+ tokens > (\d+) maximum)?")
"""The API's refusal of a prompt over the window, e.g. "prompt is too long: 210000
tokens > 200000 maximum" (our provider compacts and retries on it)."""


def _status_error(err: anthropic.APIStatusError) -> ProviderError:
    kind = _BY_TYPE.get(str(err.type)) or _BY_STATUS.get(err.status_code)
    if kind is None and err.status_code >= 500:
        kind = "server"
    if kind is None:
        # An `error` event inside a 200 stream, of a type we do not know.
        return ProviderError(UNAVAILABLE, retryable=err.status_code < 300)
    if kind == "invalid" and (match := _PROMPT_TOO_LONG.search(str(err.message))):
        window = int(match.group(1)) if match.group(1) else None
        return ProviderError(TOO_LARGE, too_long=True, window=window)
    message, retryable = _MESSAGES[kind]
    return ProviderError(message, retryable=retryable, fallback=kind in _FALLBACK)


def provider_error(err: BaseException) -> ProviderError:
    """Our sentence for a failed call. Never carries text from ``err``."""
    if isinstance(err, ProviderError):
        return err
    if isinstance(err, anthropic.APITimeoutError | httpx2.TimeoutException):
        return ProviderError(TIMED_OUT, retryable=True, fallback=True)
    if isinstance(err, anthropic.APIConnectionError):
        return ProviderError(UNREACHABLE, retryable=True, fallback=True)
    if isinstance(err, anthropic.APIStatusError):
        return _status_error(err)
    if isinstance(err, httpx2.HTTPError):
        return ProviderError(CUT_OFF, retryable=True)
    if isinstance(err, json.JSONDecodeError):
        return ProviderError(UNREADABLE, retryable=True)
    return ProviderError(UNAVAILABLE)
