"""What tokens cost: a per-model price table and the estimate it gives."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from thalos_bot.domain.events import TokenUsage

MTOK = 1_000_000


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, usage: TokenUsage) -> float:
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * self.cache_read
            + usage.cache_write_tokens * self.cache_write
        ) / MTOK


@dataclass(frozen=True, slots=True)
class PriceTable:
    prices: Mapping[str, ModelPrice]

    def price_of(self, model: str) -> ModelPrice | None:
        """The price of the longest key that is a prefix of ``model``."""
        best: str | None = None
        for key in self.prices:
            if model.startswith(key) and (best is None or len(key) > len(best)):
                best = key
        return None if best is None else self.prices[best]

    def cost(self, model: str, usage: TokenUsage) -> float | None:
        """The estimated cost of ``usage`` on ``model``; None for an unpriced model."""
        price = self.price_of(model)
        return None if price is None else price.cost(usage)
