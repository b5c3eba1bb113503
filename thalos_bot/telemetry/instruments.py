"""The daemon's metrics, named after OpenTelemetry's GenAI conventions where they exist."""

from __future__ import annotations

from opentelemetry import metrics


class Instruments:
    def __init__(self, meter: metrics.Meter) -> None:
        self.turns = meter.create_counter(
            "thalos.turns", unit="{turn}", description="Turns by outcome"
        )
        self.turn_duration = meter.create_histogram(
            "thalos.turn.duration", unit="s", description="Turn latency, first event to last"
        )
        self.time_to_first_delta = meter.create_histogram(
            "thalos.turn.time_to_first_delta",
            unit="s",
            description="From the start of a turn to its first streamed text",
        )
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Tokens per model call"
        )
        self.deliveries = meter.create_counter(
            "thalos.channel.deliveries", unit="{delivery}", description="Deliveries by channel"
        )
        self.retries = meter.create_counter(
            "thalos.channel.retries", unit="{retry}", description="Channel API retries"
        )
        self.rate_limit_wait = meter.create_histogram(
            "thalos.channel.rate_limit_wait",
            unit="s",
            description="Time spent obeying a 429 retry_after",
        )
        self.guard_verdicts = meter.create_counter(
            "thalos.guard.verdicts",
            unit="{verdict}",
            description="Tool results and recalled memories the guard annotated or withheld",
        )

    def turn(self, outcome: str, agent: str, seconds: float, first_delta: float | None) -> None:
        attributes = {"thalos.turn.outcome": outcome, "thalos.agent": agent}
        self.turns.add(1, attributes)
        self.turn_duration.record(seconds, attributes)
        if first_delta is not None:
            self.time_to_first_delta.record(first_delta, {"thalos.agent": agent})

    def model_tokens(
        self, model: str, provider: str, input_tokens: int, output_tokens: int
    ) -> None:
        base = {"gen_ai.request.model": model, "gen_ai.provider.name": provider}
        self.tokens.record(input_tokens, {**base, "gen_ai.token.type": "input"})
        self.tokens.record(output_tokens, {**base, "gen_ai.token.type": "output"})

    def delivery(self, channel: str, kind: str) -> None:
        self.deliveries.add(1, {"thalos.channel": channel, "thalos.delivery.kind": kind})

    def retry(self, channel: str, reason: str) -> None:
        self.retries.add(1, {"thalos.channel": channel, "thalos.retry.reason": reason})

    def waited_for_rate_limit(self, channel: str, seconds: float) -> None:
        self.rate_limit_wait.record(seconds, {"thalos.channel": channel})

    def guarded(self, kind: str, verdict: str, rule: str) -> None:
        attributes = {"thalos.guard.kind": kind, "thalos.guard.verdict": verdict}
        self.guard_verdicts.add(1, {**attributes, "thalos.guard.rule": rule})
