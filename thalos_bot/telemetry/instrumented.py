"""Traced wrappers for the seams: the model provider, the tool catalog, channel adapters.

The composition root wraps the real objects, so instrumented code stays free of tracing
concerns. Spans follow OpenTelemetry's GenAI conventions (``gen_ai.*``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence

from opentelemetry.trace import SpanKind, Status, StatusCode

from thalos_bot.channels.ports import ChannelAdapter, Delivery
from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.domain.ids import ConversationId
from thalos_bot.providers.base import (
    ModelDone,
    ModelEvent,
    ModelProvider,
    ModelRequest,
    ModelUsage,
    ProviderError,
)
from thalos_bot.telemetry.otel import instruments, tracer
from thalos_bot.tools.types import ToolCall, ToolCatalog, ToolContext, ToolResult, ToolSpec


class TracedProvider:
    """One ``chat {model}`` span per model call, with token usage and finish reason."""

    def __init__(self, inner: ModelProvider) -> None:
        self.inner = inner
        self.name = inner.name

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        span = tracer().start_span(
            f"chat {request.model}",
            kind=SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": self.inner.name,
                "gen_ai.request.model": request.model,
                "gen_ai.request.max_tokens": request.max_output_tokens,
                "thalos.request.messages": len(request.messages),
                "thalos.request.tools": len(request.tools),
            },
        )
        input_tokens = output_tokens = cache_read = cache_write = 0
        try:
            async for event in self.inner.stream(request):
                if isinstance(event, ModelUsage):
                    input_tokens += event.usage.input_tokens
                    output_tokens += event.usage.output_tokens
                    cache_read += event.usage.cache_read_tokens
                    cache_write += event.usage.cache_write_tokens
                elif isinstance(event, ModelDone):
                    span.set_attribute("gen_ai.response.finish_reasons", [event.stop_reason])
                yield event
        except ProviderError as exc:
            span.set_status(Status(StatusCode.ERROR, exc.user_message))
            span.set_attribute("error.type", "provider_error")
            raise
        except BaseException as exc:
            span.set_attribute("error.type", type(exc).__name__)
            raise
        finally:
            span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", output_tokens)
            span.set_attribute("gen_ai.usage.cache_read.input_tokens", cache_read)
            span.set_attribute("gen_ai.usage.cache_creation.input_tokens", cache_write)
            span.end()
            instruments().model_tokens(request.model, self.inner.name, input_tokens, output_tokens)

    async def aclose(self) -> None:
        await self.inner.aclose()


class TracedToolCatalog:
    """One ``execute_tool {name}`` span per tool call."""

    def __init__(self, inner: ToolCatalog) -> None:
        self.inner = inner

    def specs_for(self, agent: AgentDefinition) -> Sequence[ToolSpec]:
        return self.inner.specs_for(agent)

    async def call(self, call: ToolCall, context: ToolContext) -> ToolResult:
        with tracer().start_as_current_span(
            f"execute_tool {call.name}",
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.id,
                "gen_ai.conversation.id": context.session_id,
            },
        ) as span:
            result = await self.inner.call(call, context)
            span.set_attribute("thalos.tool.outcome", result.outcome)
            if result.outcome == "error":
                span.set_status(Status(StatusCode.ERROR))
            return result


class TracedAdapter:
    """One ``deliver {channel}`` span per delivery, and the deliveries metric."""

    def __init__(self, inner: ChannelAdapter) -> None:
        self.inner = inner
        self.channel_id = inner.channel_id
        self.flush_interval: float | None = getattr(inner, "flush_interval", None)

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        kind = event.kind
        with tracer().start_as_current_span(
            f"deliver {self.channel_id}",
            kind=SpanKind.PRODUCER,
            attributes={
                "thalos.channel": self.channel_id,
                "thalos.conversation.id": conversation_id,
                "thalos.delivery.kind": kind,
            },
        ):
            await self.inner.deliver(conversation_id, event)
        instruments().delivery(self.channel_id, kind)
