"""OpenTelemetry: providers, exporters, and the daemon's spans and metrics.

Instrumentation uses the global OpenTelemetry API, which is a no-op until
:func:`setup_telemetry` installs real providers, so the code paths are the same with
telemetry on or off. Every exported span passes through
:class:`~thalos_bot.telemetry.redacting.RedactingSpanExporter`, which scrubs secrets
(the bot token inside Telegram URLs, API keys, authorization headers) from span names,
attributes and events, whoever created the span. The SDK is loaded only when tracing or
metrics are on: a daemon without them starts without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog
from opentelemetry import metrics, trace

from thalos_bot import __version__
from thalos_bot.config.telemetry import TelemetrySettings
from thalos_bot.telemetry.instruments import Instruments

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

log = structlog.get_logger(__name__)

INSTRUMENTATION = "thalos_bot"


@dataclass(slots=True)
class _Current:
    tracer: trace.Tracer
    instruments: Instruments


_current = _Current(
    trace.get_tracer(INSTRUMENTATION, __version__),
    Instruments(metrics.get_meter(INSTRUMENTATION, __version__)),
)


def tracer() -> trace.Tracer:
    """The daemon's tracer (a no-op until :func:`setup_telemetry` installs one)."""
    return _current.tracer


def instruments() -> Instruments:
    return _current.instruments


@dataclass(slots=True)
class Telemetry:
    tracer_provider: TracerProvider | None = None
    meter_provider: MeterProvider | None = None

    def shutdown(self) -> None:
        if self.tracer_provider is not None:
            self.tracer_provider.shutdown()
        if self.meter_provider is not None:
            self.meter_provider.shutdown()
        reset_telemetry()


def reset_telemetry() -> None:
    """Back to the no-op API (what a process without telemetry uses)."""
    _current.tracer = trace.get_tracer(INSTRUMENTATION, __version__)
    _current.instruments = Instruments(metrics.get_meter(INSTRUMENTATION, __version__))


def _span_exporter(settings: TelemetrySettings) -> SpanExporter | None:
    if settings.exporter == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if settings.exporter == "otlp" and settings.otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=settings.otlp_endpoint.rstrip("/") + "/v1/traces")
    return None


def _metric_reader(settings: TelemetrySettings) -> MetricReader | None:
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    interval_ms = settings.metric_interval * 1000
    if settings.exporter == "console":
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

        return PeriodicExportingMetricReader(ConsoleMetricExporter(), interval_ms)
    if settings.exporter == "otlp" and settings.otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        exporter = OTLPMetricExporter(endpoint=settings.otlp_endpoint.rstrip("/") + "/v1/metrics")
        return PeriodicExportingMetricReader(exporter, interval_ms)
    return None


def setup_telemetry(
    settings: TelemetrySettings,
    *,
    span_exporter: SpanExporter | None = None,
    metric_reader: MetricReader | None = None,
    install_global: bool = True,
) -> Telemetry:
    """Set up tracing and metrics as configured.

    The daemon installs the providers globally too, so spans that libraries create (the
    Anthropic SDK makes one per API call) go through the same redacting exporter. Tests
    pass in-memory exporters and ``install_global=False``.
    """
    if not (settings.tracing or settings.metrics):
        log.info("telemetry_configured", tracing=False, metrics=False, exporter="none")
        return Telemetry()
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    from thalos_bot.telemetry.redacting import RedactingSpanExporter

    resource = Resource.create(
        {"service.name": settings.service_name, "service.version": __version__}
    )
    result = Telemetry()
    if settings.tracing:
        exporter = span_exporter or _span_exporter(settings)
        provider = TracerProvider(resource=resource)
        if exporter is not None:
            processor = (
                SimpleSpanProcessor(RedactingSpanExporter(exporter))
                if span_exporter is not None
                else BatchSpanProcessor(RedactingSpanExporter(exporter))
            )
            provider.add_span_processor(processor)
        if install_global:
            trace.set_tracer_provider(provider)
        _current.tracer = provider.get_tracer(INSTRUMENTATION, __version__)
        result.tracer_provider = provider
    if settings.metrics:
        reader = metric_reader or _metric_reader(settings)
        meter_provider = MeterProvider(resource=resource, metric_readers=[reader] if reader else [])
        if install_global:
            metrics.set_meter_provider(meter_provider)
        _current.instruments = Instruments(meter_provider.get_meter(INSTRUMENTATION, __version__))
        result.meter_provider = meter_provider
    log.info(
        "telemetry_configured",
        tracing=settings.tracing,
        metrics=settings.metrics,
        exporter=settings.exporter if (settings.tracing or settings.metrics) else "none",
    )
    return result
