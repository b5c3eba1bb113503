"""The Anthropic model provider: one streamed Messages API call through the official SDK.

Events come out as the stream arrives: text deltas at once, a tool call once its input
JSON is complete, :class:`ModelUsage` increments (input at the start, the rest at the
end; their sum is the response's usage), then exactly one :class:`ModelDone`.
Iterate inside ``contextlib.aclosing(provider.stream(request))`` so an abandoned
stream releases its connection at once.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
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
    json_parts: list[str] = field(default_factory=list)
    block: ToolUseBlock | None = None


class _Assembly:
    """Turns raw stream events into model events and the final assistant message."""

    def __init__(self) -> None:
        self._parts: dict[int, _TextPart | _ToolPart] = {}
        self._usage = TokenUsage()
        self._stop_reason: str | None = None
        self.done = False

    def feed(self, event: object) -> list[ModelEvent]:
        """The model events that ``event`` completes, in order. Event kinds newer than
        the SDK's types are ignored."""
        if self.done:
            return []
        if isinstance(event, RawMessageStartEvent):
            first = event.message.usage
            self._usage = TokenUsage(
                first.input_tokens,
                first.output_tokens,
                first.cache_read_input_tokens or 0,
                first.cache_creation_input_tokens or 0,
            )
            return [ModelUsage(self._usage)]
        if isinstance(event, RawContentBlockStartEvent):
            return self._block_start(event)
        if isinstance(event, RawContentBlockDeltaEvent):
            return self._delta(event)
        if isinstance(event, RawContentBlockStopEvent):
            part = self._parts.get(event.index)
            if isinstance(part, _ToolPart):
                part.block = ToolUseBlock(part.id, part.name, _parse_input(part))
                return [ModelToolUse(part.block)]
            return []
        if isinstance(event, RawMessageDeltaEvent):
            self._stop_reason = event.delta.stop_reason or self._stop_reason
            return self._usage_update(event)
        if isinstance(event, RawMessageStopEvent):
            return self._finish()
        return []

    def _block_start(self, event: RawContentBlockStartEvent) -> list[ModelEvent]:
        block = event.content_block
        if block.type == "text":
            self._parts[event.index] = _TextPart(block.text)
            return [ModelTextDelta(block.text)] if block.text else []
        if block.type == "tool_use":
            self._parts[event.index] = _ToolPart(block.id, block.name, dict(block.input))
        return []  # other block kinds (thinking, server tools) are not ours to keep

    def _usage_update(self, event: RawMessageDeltaEvent) -> list[ModelEvent]:
        """message_delta usage is cumulative; emit only what was not reported yet."""
        final, seen = event.usage, self._usage
        total = TokenUsage(
            _either(final.input_tokens, seen.input_tokens),
            final.output_tokens,
            _either(final.cache_read_input_tokens, seen.cache_read_tokens),
            _either(final.cache_creation_input_tokens, seen.cache_write_tokens),
        )
        increment = TokenUsage(
            max(0, total.input_tokens - seen.input_tokens),
            max(0, total.output_tokens - seen.output_tokens),
            max(0, total.cache_read_tokens - seen.cache_read_tokens),
            max(0, total.cache_write_tokens - seen.cache_write_tokens),
        )
        self._usage = seen + increment
        return [ModelUsage(increment)] if increment.total else []

    def _delta(self, event: RawContentBlockDeltaEvent) -> list[ModelEvent]:
        part, delta = self._parts.get(event.index), event.delta
        if delta.type == "text_delta" and isinstance(part, _TextPart):
            part.text += delta.text
            return [ModelTextDelta(delta.text)] if delta.text else []
        if delta.type == "input_json_delta" and isinstance(part, _ToolPart):
            part.json_parts.append(delta.partial_json)
        return []

    def _finish(self) -> list[ModelEvent]:
        blocks: list[Block] = []
        for _, part in sorted(self._parts.items()):
            if isinstance(part, _TextPart):
                if part.text:
                    blocks.append(TextBlock(part.text))
            elif part.block is not None:
                blocks.append(part.block)
        self.done = True
        return [ModelDone(Message("assistant", tuple(blocks)), self._stop_reason or "unknown")]


def _either(value: int | None, fallback: int) -> int:
    return fallback if value is None else value


def _parse_input(part: _ToolPart) -> dict[str, Any]:
    raw = "".join(part.json_parts)
    if not raw:
        return part.start_input
    parsed = json.loads(raw)  # a JSONDecodeError becomes ProviderError(UNREADABLE)
    if not isinstance(parsed, dict):
        log.warning("anthropic_tool_input_not_an_object", tool=part.name)
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

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
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
                messages=message_params(request.messages, request.media),
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
