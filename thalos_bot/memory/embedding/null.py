"""No embedder: recall is BM25 alone and no record is ever index-pending."""

from __future__ import annotations

from collections.abc import Sequence

from thalos_bot.memory.embedding.base import EmbedderError, Vectors


class NullEmbedder:
    model = "none"
    dimensions = 0
    available = False

    async def embed(self, texts: Sequence[str]) -> Vectors:
        raise EmbedderError("no embedder is configured")

    async def aclose(self) -> None:
        return None
