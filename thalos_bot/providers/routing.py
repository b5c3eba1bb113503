"""Where each agent's model calls go, and what its context window is.

A :class:`ProviderRoute` pairs the provider an agent streams from (one provider, or a
:class:`~thalos_bot.providers.fallback.FallbackProvider` chain) with the source of its
context window: a fixed, known size (:class:`FixedWindow`), or an OpenAI-compatible
provider that asks its server and learns from too-long refusals. ``None`` means the
window is unknown, and must not be guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from thalos_bot.providers.base import ModelProvider

UNKNOWN_WINDOW_TOKENS = 1_000_000
"""The window compaction plans with while the real one is unknown: larger than any
model's, so nothing is compacted against a guess (a too-long refusal teaches the size)."""


class WindowSource(Protocol):
    async def context_window(self, model: str) -> int | None: ...

    def known_window(self, model: str) -> int | None: ...

    def learn_window(self, model: str, window: int) -> None: ...


class FixedWindow:
    """A window known from the configuration (or the model's documented size)."""

    def __init__(self, tokens: int | None) -> None:
        self._tokens = tokens
        self._learned: dict[str, int] = {}

    async def context_window(self, model: str) -> int | None:
        return self.known_window(model)

    def known_window(self, model: str) -> int | None:
        return self._learned.get(model, self._tokens)

    def learn_window(self, model: str, window: int) -> None:
        known = self.known_window(model)
        self._learned[model] = window if known is None else min(known, window)


@dataclass(frozen=True, slots=True)
class ProviderRoute:
    provider: ModelProvider
    windows: WindowSource
    offers_tools: bool = True
    """False: the agent's provider has no tool calling, so no tools are offered."""
