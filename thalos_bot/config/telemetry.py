"""``[telemetry]``: OpenTelemetry traces and metrics (off unless configured)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from thalos_bot.config.types import DAY, duration


class TelemetrySettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tracing: StrictBool = False
    """Record spans: one per turn, model call, tool call and channel delivery."""
    metrics: StrictBool = False
    """Record metrics: turns, tokens, latencies, deliveries, retries, 429 waits."""
    exporter: Literal["otlp", "console", "none"] = "otlp"
    """Where spans and metrics go. ``otlp`` needs ``otlp_endpoint``; without one nothing
    is exported. Extra OTLP headers come from ``OTEL_EXPORTER_OTLP_HEADERS``."""
    otlp_endpoint: str | None = Field(None, pattern=r"^https?://\S+$")
    """e.g. ``http://127.0.0.1:4318`` (OTLP over HTTP)."""
    service_name: str = Field("thalos-bot", min_length=1, max_length=100)
    metric_interval: Annotated[float, duration(1.0, DAY)] = 60.0
