"""Recall quality on a labelled set (``recall_set.json``): ~50 memories a personal
assistant might hold, ~20 messages with the memories that should come back.

recall@5 is the mean, over queries, of the share of expected memories among the top 5.
The floor is set below the measured figure (0.89 with FTS5/BM25 and no embeddings) so a
regression fails while the lexical misses (e.g. "dinner recipe" → "is vegetarian") are
accepted for what they are.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from thalos_bot.memory.records import new_memory
from thalos_bot.memory.store import MemoryStore

pytestmark = pytest.mark.anyio

DATA = json.loads(Path(__file__).with_name("recall_set.json").read_text())
FLOOR = 0.8


async def test_recall_at_5_on_the_labelled_set(store: MemoryStore) -> None:
    key_of: dict[str, str] = {}
    for memory in DATA["memories"]:
        stored = await store.store(
            new_memory(
                "sam",
                memory["text"],
                kind=memory["kind"],
                tags=memory["tags"],
                importance=memory["importance"],
            ),
            dedupe=False,
        )
        key_of[stored.record.id] = memory["key"]
    # Another owner's look-alikes must neither help nor hurt.
    await store.insert_many(new_memory("other", m["text"]) for m in DATA["memories"][:20])

    scores: list[float] = []
    misses: list[str] = []
    for case in DATA["queries"]:
        found = [key_of[r.record.id] for r in await store.recall(["sam"], case["query"], top_k=5)]
        expected = set(case["expected"])
        scores.append(len(expected & set(found)) / len(expected))
        if scores[-1] < 1:
            misses.append(f"  {case['query']!r}: expected {sorted(expected)}, got {found}")
    recall_at_5 = sum(scores) / len(scores)
    print(
        f"\nrecall@5 = {recall_at_5:.3f} over {len(scores)} queries, "
        f"{len(DATA['memories'])} memories",
        *misses,
        sep="\n",
    )
    assert len(DATA["memories"]) >= 50
    assert len(DATA["queries"]) >= 20
    assert recall_at_5 >= FLOOR
