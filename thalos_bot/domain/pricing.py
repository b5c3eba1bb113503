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
class ModelUsages:
    """Usage split by the model that spent it: one turn's model calls may be answered by
    different members of a fallback chain, each with its own price."""

    parts: tuple[tuple[str, TokenUsage], ...] = ()

    def add(self, model: str, usage: TokenUsage) -> ModelUsages:
        if not usage.total:
            return self
        merged = dict(self.parts)
        merged[model] = merged.get(model, TokenUsage()) + usage
        return ModelUsages(tuple(merged.items()))

    def __add__(self, other: ModelUsages) -> ModelUsages:
        result = self
        for model, usage in other.parts:
            result = result.add(model, usage)
        return result

    @property
    def total(self) -> TokenUsage:
        total = TokenUsage()
        for _, usage in self.parts:
            total += usage
        return total


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

    def known_cost(self, usages: ModelUsages) -> float:
        """The estimated cost of each part on its own model, an unpriced model's part
        counting nothing (the usage ledger's rule)."""
        return sum((self.cost(model, usage) or 0.0 for model, usage in usages.parts), 0.0)

    def estimate(self, usages: ModelUsages) -> float | None:
        """The estimated cost of each part on its own model; None when a part's model has
        no price (/status says "unknown" rather than a figure that leaves it out)."""
        costs = [self.cost(model, usage) for model, usage in usages.parts]
        if any(cost is None for cost in costs):
            return None
        return sum((cost for cost in costs if cost is not None), 0.0)
