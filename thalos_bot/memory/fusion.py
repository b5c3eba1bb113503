"""Fusing the BM25 and vector rankings into one.

Reciprocal rank fusion: a record's fused score is ``sum(weight / (k + rank))`` over the
rankings it appears in (rank 1 first). Ranks, not raw scores, are fused, because BM25
and cosine are on unrelated scales. ``k`` and the weights were chosen on the labelled
set (``bench/memory.py --quality`` prints the alternatives); see the README.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from thalos_bot.memory.index import Hit

Ranking = Literal["hybrid", "lexical", "semantic"]

RRF_K = 5
"""Much smaller than the classic 60: with a top-k of 5 the first ranks must dominate."""
LEXICAL_WEIGHT = 1.0
SEMANTIC_WEIGHT = 3.0


@dataclass(frozen=True, slots=True)
class Fusion:
    k: float = RRF_K
    lexical_weight: float = LEXICAL_WEIGHT
    semantic_weight: float = SEMANTIC_WEIGHT


DEFAULT_FUSION = Fusion()


def fuse(
    lexical: Sequence[Hit], semantic: Sequence[Hit], fusion: Fusion = DEFAULT_FUSION
) -> list[Hit]:
    """Both rankings as one, best first (a record in only one ranking still counts)."""
    k = fusion.k
    scores: dict[int, float] = {}
    for hits, weight in ((lexical, fusion.lexical_weight), (semantic, fusion.semantic_weight)):
        for rank, hit in enumerate(hits, start=1):
            scores[hit.seq] = scores.get(hit.seq, 0.0) + weight / (k + rank)
    return sorted((Hit(seq, score) for seq, score in scores.items()), key=lambda h: -h.score)
