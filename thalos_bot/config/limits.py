"""``[limits]``: what a session, a principal's day and a turn may spend.

Prices are USD per million tokens, as Anthropic publishes them; the defaults are
estimates of the published list prices (5-minute cache writes) and can be overridden or
extended under ``[limits.prices."<model id prefix>"]``. A model id is priced by the
longest key that is a prefix of it, so ``claude-sonnet-5-5`` covers
``claude-sonnet-5-5-20260601`` too.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, field_validator

from thalos_bot.domain.pricing import ModelPrice, PriceTable

DEFAULT_PRICES: Mapping[str, ModelPrice] = {
    "claude-fable-5-1": ModelPrice(10.0, 50.0, 0.25, 12.5),
    "claude-fable-5": ModelPrice(10.0, 50.0, 1.0, 12.5),
    "claude-opus-5-5": ModelPrice(4.0, 20.0, 0.2, 5.0),
    "claude-opus-5": ModelPrice(5.0, 25.0, 0.5, 6.25),
    "claude-opus-4-8": ModelPrice(5.0, 25.0, 0.5, 6.25),
    "claude-opus-4-7": ModelPrice(5.0, 25.0, 0.5, 6.25),
    "claude-opus-4-6": ModelPrice(5.0, 25.0, 0.5, 6.25),
    "claude-opus-4-5": ModelPrice(5.0, 25.0, 0.5, 6.25),
    "claude-opus-4": ModelPrice(15.0, 75.0, 1.5, 18.75),
    "claude-sonnet-5-5": ModelPrice(2.0, 10.0, 0.2, 2.5),
    "claude-sonnet-5": ModelPrice(2.0, 10.0, 0.2, 2.5),
    "claude-sonnet-4": ModelPrice(3.0, 15.0, 0.3, 3.75),
    "claude-haiku-5-5": ModelPrice(0.1, 0.5, 0.01, 0.125),
    "claude-haiku-4-5": ModelPrice(1.0, 5.0, 0.1, 1.25),
}


class PriceSettings(BaseModel):
    """``[limits.prices."<model>"]``: USD per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0, le=10_000)
    output: float = Field(ge=0, le=10_000)
    cache_read: float | None = Field(None, ge=0, le=10_000)
    """Default: a tenth of ``input``."""
    cache_write: float | None = Field(None, ge=0, le=10_000)
    """Default: 1.25 × ``input`` (5-minute cache writes)."""

    def price(self) -> ModelPrice:
        return ModelPrice(
            self.input,
            self.output,
            self.input * 0.1 if self.cache_read is None else self.cache_read,
            self.input * 1.25 if self.cache_write is None else self.cache_write,
        )


class LimitsSettings(BaseModel):
    """``[limits]``. Token counts are every token the provider reports: input, output,
    cache reads and cache writes. A missing limit is no limit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    session_tokens: int | None = Field(None, ge=1)
    daily_tokens: int | None = Field(None, ge=1)
    """Per principal, per day (see ``timezone``)."""
    daily_cost_usd: float | None = Field(None, gt=0, le=1_000_000)
    """Per principal, per day, estimated from ``prices``."""
    monthly_tokens: int | None = Field(None, ge=1)
    """Per principal, per calendar month (see ``timezone``)."""
    monthly_cost_usd: float | None = Field(None, gt=0, le=10_000_000)
    """Per principal, per calendar month, estimated from ``prices``."""
    turn_tool_rounds: int = Field(8, ge=1, le=100)
    """Model calls one turn may make; ``[provider] max_tool_rounds`` is its old name."""
    timezone: str = "UTC"
    """Where a day starts and ends for the daily limits (an IANA name)."""
    prices: dict[str, PriceSettings] = Field(default_factory=dict)

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"{value!r} is not a time zone name (e.g. UTC, Europe/Berlin)"
            ) from None
        return value

    def price_table(self) -> PriceTable:
        table = dict(DEFAULT_PRICES)
        table.update({model: p.price() for model, p in self.prices.items()})
        return PriceTable(table)
