"""Spans and metrics over a real turn: the Anthropic fake, the runtime, the pump."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from structlog.testing import capture_logs

from tests.fakes.anthropic_api import AnthropicFake, FakeUsage, text_reply
from tests.pump.harness import CATALOG, CHANNEL, FakeSource, RecordingAdapter
from thalos_bot.config.models import PumpSettings
from thalos_bot.config.telemetry import TelemetrySettings
from thalos_bot.providers.anthropic import AnthropicProvider
from thalos_bot.pump.pump import ChannelPump
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.storage.memory_conversations import MemoryConversationMap
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.telemetry.instrumented import TracedAdapter, TracedProvider
from thalos_bot.telemetry.otel import Telemetry, setup_telemetry
from thalos_bot.telemetry.redacting import RedactingSpanExporter

API_KEY = "sk-ant-api03-TESTSECRET-0123456789abcdef"
BOT_TOKEN = "987654321:AAF-thisIsAFakeTokenForTests_0123456789"


@pytest.fixture
def telemetry() -> Iterator[tuple[InMemorySpanExporter, InMemoryMetricReader, Telemetry]]:
    spans = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    settings = TelemetrySettings(tracing=True, metrics=True, exporter="none")
    installed = setup_telemetry(
        settings, span_exporter=spans, metric_reader=reader, install_global=False
    )
    yield spans, reader, installed
    installed.shutdown()


def metric_points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    points: dict[str, list[Any]] = {}
    assert data is not None
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                points.setdefault(metric.name, []).extend(metric.data.data_points)
    return points


@pytest.mark.anyio
async def test_a_turn_produces_turn_model_and_delivery_spans_without_secrets(
    telemetry: tuple[InMemorySpanExporter, InMemoryMetricReader, Telemetry],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    spans, reader, _ = telemetry
    adapter = RecordingAdapter()
    source = FakeSource()
    with AnthropicFake() as fake, capture_logs() as logs:
        fake.enqueue(text_reply("Hi", " there", usage=FakeUsage(input_tokens=12, output_tokens=3)))
        provider = TracedProvider(AnthropicProvider(api_key=API_KEY, base_url=fake.base_url))
        async with Runtime(
            catalog=CATALOG,
            store=MemorySessionStore(),
            provider=provider,
            settings=RuntimeSettings(model="claude-sonnet-5-5"),
        ) as runtime:
            pump = ChannelPump(
                runtime=runtime,
                catalog=CATALOG,
                conversations=MemoryConversationMap(),
                adapters={CHANNEL: TracedAdapter(adapter)},
                settings=PumpSettings(flush_interval=0.05),
            )
            async with anyio.create_task_group() as group:
                group.start_soon(pump.run, [source])
                await source.send("hello").wait()
                source.close()
        await provider.aclose()
    finished = spans.get_finished_spans()
    names = [s.name for s in finished]
    assert "invoke_agent helper" in names
    assert "chat claude-sonnet-5-5" in names
    assert "deliver fake" in names
    turn = next(s for s in finished if s.name == "invoke_agent helper")
    chat = next(s for s in finished if s.name.startswith("chat "))
    assert chat.parent is not None
    assert chat.parent.span_id == turn.context.span_id, "the model call nests in the turn"
    assert chat.attributes is not None
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.provider.name"] == "anthropic"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 12
    assert chat.attributes["gen_ai.usage.output_tokens"] == 3
    assert turn.attributes is not None
    assert turn.attributes["thalos.turn.outcome"] == "completed"
    everything = json.dumps(
        [json.loads(s.to_json()) for s in finished] + [dict(e) for e in logs], default=str
    )
    assert API_KEY not in everything
    assert "Authorization" not in everything
    points = metric_points(reader)
    turns = points["thalos.turns"]
    assert sum(p.value for p in turns) == 1
    assert dict(turns[0].attributes)["thalos.turn.outcome"] == "completed"
    token_types = {
        dict(p.attributes)["gen_ai.token.type"]: p.sum for p in points["gen_ai.client.token.usage"]
    }
    assert token_types == {"input": 12, "output": 3}
    assert points["thalos.turn.time_to_first_delta"][0].count == 1
    assert sum(p.value for p in points["thalos.channel.deliveries"]) >= 2


def test_the_exporter_scrubs_secrets_from_any_span() -> None:
    inner = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(RedactingSpanExporter(inner)))
    tracer = provider.get_tracer("third-party")
    url = f"https://api.telegram.org/bot{BOT_TOKEN}/getUpdates"
    with tracer.start_as_current_span(f"POST {url}") as span:
        span.set_attribute("http.url", url)
        span.set_attribute("http.request.header.authorization", f"Bearer {API_KEY}")
        span.add_event("retry", {"url": url})
    (exported,) = inner.get_finished_spans()
    text = exported.to_json()
    assert BOT_TOKEN not in text
    assert API_KEY not in text
    assert "getUpdates" in text
    provider.shutdown()
    assert isinstance(trace.NoOpTracer(), trace.Tracer)
