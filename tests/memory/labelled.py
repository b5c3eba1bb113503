"""The labelled recall set (``recall_set.json``) and how recall is scored on it.

Shared by the quality test and ``bench/memory.py --quality``. Scores, per query kind
(``paraphrase``: no search term in common with the expected memories; ``lexical``):

- recall@1: the share of queries whose first result is expected,
- recall@5: the mean share of the expected memories among the first five,
- MRR: the mean of 1 / rank of the first expected memory (0 when none in the top 10).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thalos_bot.memory.fusion import Ranking
from thalos_bot.memory.records import new_memory
from thalos_bot.memory.store import MemoryStore

DATA: dict[str, Any] = json.loads(Path(__file__).with_name("recall_set.json").read_text())
OWNER = "sam"
DEPTH = 10


@dataclass(frozen=True, slots=True)
class Scores:
    queries: int
    recall_at_1: float
    recall_at_5: float
    mrr: float

    def row(self, label: str) -> str:
        return (
            f"| {label:<22} | {self.queries:>3} | {self.recall_at_1:.3f} | "
            f"{self.recall_at_5:.3f} | {self.mrr:.3f} |"
        )


async def load(store: MemoryStore) -> dict[str, str]:
    """Store the set under :data:`OWNER` (plus another owner's look-alikes, which must
    neither help nor hurt); returns record id → key."""
    key_of: dict[str, str] = {}
    for memory in DATA["memories"]:
        stored = await store.store(
            new_memory(
                OWNER,
                memory["text"],
                kind=memory["kind"],
                tags=memory["tags"],
                importance=memory["importance"],
            ),
            dedupe=False,
        )
        key_of[stored.record.id] = memory["key"]
    for memory in DATA["memories"][:20]:
        await store.store(new_memory("other", memory["text"]), dedupe=False)
    return key_of


async def ranked_keys(
    store: MemoryStore, key_of: dict[str, str], query: str, ranking: Ranking
) -> list[str]:
    found = await store.recall([OWNER], query, top_k=DEPTH, touch=False, ranking=ranking)
    return [key_of[r.record.id] for r in found]


async def score(
    store: MemoryStore, key_of: dict[str, str], ranking: Ranking, kind: str | None
) -> tuple[Scores, list[str]]:
    """Scores over the queries of ``kind`` (``None``: all), and the misses at 5."""
    at1: list[float] = []
    at5: list[float] = []
    reciprocal: list[float] = []
    misses: list[str] = []
    for case in DATA["queries"]:
        if kind is not None and case["kind"] != kind:
            continue
        found = await ranked_keys(store, key_of, case["query"], ranking)
        expected = set(case["expected"])
        at1.append(1.0 if found[:1] and found[0] in expected else 0.0)
        at5.append(len(expected & set(found[:5])) / len(expected))
        first = next((i for i, k in enumerate(found, start=1) if k in expected), None)
        reciprocal.append(1 / first if first else 0.0)
        if at5[-1] < 1:
            misses.append(f"{case['query']!r}: expected {sorted(expected)}, got {found[:5]}")
    n = len(at5)
    return Scores(n, sum(at1) / n, sum(at5) / n, sum(reciprocal) / n), misses
