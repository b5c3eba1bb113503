"""The Anthropic model provider: one streamed Messages API call through the official SDK.

Events come out as the stream arrives: text deltas at once, a tool call once its input
JSON is complete, one :class:`ModelUsage` with the response's totals, then exactly one
:class:`ModelDone`. Iterate inside ``contextlib.aclosing(provider.stream(request))`` so
an abandoned stream releases its connection at once.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import anyio
import httpx2
import structlog
from anthropic import omit
from anthropic.types import (
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
    RawMessageStreamEvent,
)

from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.messages import Block, Message, TextBlock, ToolUseBlock
from thalos_bot.providers.anthropic_mapping import (
    CUT_OFF,
    NO_API_KEY,
    UNREADABLE,
    message_params,
    provider_error,
    system_params,
    tool_params,
)
from thalos_bot.providers.base import (
    ModelDone,
    ModelEvent,
    ModelRequest,
    ModelTextDelta,
    ModelToolUse,
    ModelUsage,
    ProviderError,
)

log = structlog.get_logger(__name__)

_CLOSE_GRACE_S = 1.0
"""How long closing an abandoned stream may take, even inside a cancelled scope."""


@dataclass(slots=True)
class _TextPart:
    text: str = ""


@dataclass(slots=True)
class _ToolPart:
    id: str
    name: str
    start_input: dict[str, Any]
    json: list[str] = field(default_factory=list)
    block: ToolUseBlock | None = None


class _Assembly:
    """Turns raw stream events into model events and the final assistant message."""

    def __init__(self) -> None:
        self._parts: dict[int, _TextPart | _ToolPart] = {}
        self._start_usage = TokenUsage()
        self._usage_sent = False
        self._stop_reason: str | None = None
        self.done = False

    def feed(self, event: RawMessageStreamEvent) -> list[ModelEvent]:
        if isinstance(event, RawMessageStartEvent):
            u = event.message.usage
            self._start_usage = TokenUsage(
                u.input_tokens,
                u.output_tokens,
                u.cache_read_input_tokens or 0,
                u.cache_creation_input_tokens or 0,
            )
        elif isinstance(event, RawContentBlockStartEvent):
            block = event.content_block
            if block.type == "text":
                self._parts[event.index] = _TextPart(block.text)
                if block.text:
                    return [ModelTextDelta(block.text)]
            elif block.type == "tool_use":
                start_input = block.input if isinstance(block.input, dict) else {}
                self._parts[event.index] = _ToolPart(block.id, block.name, start_input)
        elif isinstance(event, RawContentBlockDeltaEvent):
            return self._delta(event)
        elif isinstance(event, RawContentBlockStopEvent):
            part = self._parts.get(event.index)
            if isinstance(part, _ToolPart):
                part.block = ToolUseBlock(part.id, part.name, _parse_input(part))
                return [ModelToolUse(part.block)]
        elif isinstance(event, RawMessageDeltaEvent):
            self._stop_reason = event.delta.stop_reason or self._stop_reason
            u, start = event.usage, self._start_usage
            self._usage_sent = True
            return [
                ModelUsage(
                    TokenUsage(
                        start.input_tokens if u.input_tokens is None else u.input_tokens,
                        u.output_tokens,
                        _either(u.cache_read_input_tokens, start.cache_read_tokens),
                        _either(u.cache_creation_input_tokens, start.cache_write_tokens),
                    )
                )
            ]
        elif isinstance(event, RawMessageStopEvent):
            return self._finish()
        return []

    def _delta(self, event: RawContentBlockDeltaEvent) -> list[ModelEvent]:
        part, delta = self._parts.get(event.index), event.delta
        if delta.type == "text_delta" and isinstance(part, _TextPart):
            part.text += delta.text
            return [ModelTextDelta(delta.text)] if delta.text else []
        if delta.type == "input_json_delta" and isinstance(part, _ToolPart):
            part.json.append(delta.partial_json)
        return []

    def _finish(self) -> list[ModelEvent]:
        out: list[ModelEvent] = []
        if not self._usage_sent:
            self._usage_sent = True
            out.append(ModelUsage(self._start_usage))
        blocks: list[Block] = []
        for _, part in sorted(self._parts.items()):
            if isinstance(part, _TextPart):
                if part.text:
                    blocks.append(TextBlock(part.text))
            elif part.block is not None:
                blocks.append(part.block)
        self.done = True
        out.append(ModelDone(Message("assistant", tuple(blocks)), self._stop_reason or "unknown"))
        return out


def _either(value: int | None, fallback: int) -> int:
    return fallback if value is None else value


def _parse_input(part: _ToolPart) -> dict[str, Any]:
    raw = "".join(part.json)
    if not raw:
        return part.start_input
    parsed = json.loads(raw)  # a JSONDecodeError becomes ProviderError(UNREADABLE)
    if not isinstance(parsed, dict):
        raise ProviderError(UNREADABLE, retryable=True)
    return parsed


class AnthropicProvider:
    """:class:`~thalos_bot.providers.base.ModelProvider` over ``anthropic.AsyncAnthropic``.

    With ``api_key=None`` it constructs fine and every call fails with a
    :class:`ProviderError` naming ``ANTHROPIC_API_KEY``, without touching the network.
    The SDK retries 408/409/429/5xx/529 and connection errors ``max_retries`` times.
    """

    name = "anthropic"

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
        prompt_caching: bool = True,
    ) -> None:
        self._prompt_caching = prompt_caching
        self._client: anthropic.AsyncAnthropic | None = None
        if api_key:
            self._client = anthropic.AsyncAnthropic(
                api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
            )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one response; raises :class:`ProviderError` with our wording."""
        if self._client is None:
            raise ProviderError(NO_API_KEY)
        tools = tool_params(request.tools, caching=self._prompt_caching)
        system = system_params(request.system, caching=self._prompt_caching)
        assembly = _Assembly()
        try:
            raw = await self._client.messages.create(
                model=request.model,
                max_tokens=request.max_output_tokens,
                messages=message_params(request.messages),
                system=system or omit,
                tools=tools or omit,
                tool_choice={"type": "none"} if tools and not request.allow_tools else omit,
                stream=True,
            )
        except anthropic.AnthropicError as err:
            raise _failed(err, request) from err
        try:
            async for event in raw:
                for out in assembly.feed(event):
                    yield out
                if assembly.done:
                    break
        except (anthropic.AnthropicError, httpx2.HTTPError, json.JSONDecodeError) as err:
            raise _failed(err, request) from err
        finally:
            # Release the connection even when the consumer was cancelled.
            with anyio.move_on_after(_CLOSE_GRACE_S, shield=True):
                await raw.close()
        if not assembly.done:
            log.warning("anthropic_stream_incomplete", model=request.model)
            raise ProviderError(CUT_OFF, retryable=True)


def _failed(err: BaseException, request: ModelRequest) -> ProviderError:
    """Log the raw cause (never headers or the key) and return our error."""
    failure = provider_error(err)
    log.warning(
        "anthropic_call_failed",
        model=request.model,
        error_type=type(err).__name__,
        status_code=getattr(err, "status_code", None),
        request_id=getattr(err, "request_id", None),
        api_error_type=getattr(err, "type", None),
        detail=str(err)[:500],
        user_message=failure.user_message,
        retryable=failure.retryable,
    )
    return failure
