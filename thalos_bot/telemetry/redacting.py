"""Spans leave the process scrubbed: :class:`RedactingSpanExporter` wraps the exporter
:func:`thalos_bot.telemetry.otel.setup_telemetry` sets up and hands it copies of the
spans with every secret removed (the OpenTelemetry SDK is loaded with it, only when
tracing is on)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Status

from thalos_bot.telemetry.redact import redact_value


class RedactingSpanExporter(SpanExporter):
    """Wraps an exporter; hands it copies of spans with every secret scrubbed."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.inner.export([scrub_span(span) for span in spans])

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


def scrub_span(span: ReadableSpan) -> ReadableSpan:
    attributes: dict[str, Any] = {
        key: redact_value(value) for key, value in (span.attributes or {}).items()
    }
    events = [
        Event(
            str(redact_value(event.name)),
            {k: redact_value(v) for k, v in (event.attributes or {}).items()},
            event.timestamp,
        )
        for event in span.events
    ]
    return ReadableSpan(
        name=str(redact_value(span.name)),
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attributes,
        events=events,
        links=span.links,
        kind=span.kind,
        status=Status(span.status.status_code, redact_value(span.status.description))
        if span.status.description
        else span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )
