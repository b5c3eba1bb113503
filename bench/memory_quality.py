"""Recall quality on the labelled set, for ``bench/memory.py --quality``."""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench.memory_embedders import make_embedder
from tests.memory.labelled import Scores, load, score
from thalos_bot.memory.fusion import Fusion, Ranking
from thalos_bot.memory.schema import with_memory
from thalos_bot.memory.store import MemoryStore
from thalos_bot.memory.vectors import VectorIndex
from thalos_bot.storage.database import Database

HEADER = "| ranking / queries      |   n |  R@1  |  R@5  |  MRR  |\n|---|---|---|---|---|"
FLOORS = (0.0, 0.15, 0.25)
FUSIONS = [Fusion(k, 1.0, w) for k in (5.0, 20.0, 60.0) for w in (1.0, 2.0, 3.0)]


async def quality(embedder: str = "wordllama") -> None:
    with tempfile.TemporaryDirectory(prefix="thalos-bench-quality-") as folder:
        async with await Database.open(Path(folder) / "q.db", migrations=with_memory()) as db:
            chosen = make_embedder(embedder)
            if chosen is None:
                raise SystemExit("--quality needs an embedder (wordllama or local:PATH)")
            vectors = VectorIndex(chosen)
            store = MemoryStore(db, vectors=vectors)
            key_of = await load(store)
            print(f"defaults: min_similarity {vectors.min_similarity}, {store.fusion}\n")
            print(HEADER)
            rankings: list[tuple[str, Ranking]] = [
                ("bm25", "lexical"),
                ("vector", "semantic"),
                ("hybrid", "hybrid"),
            ]
            for label, ranking in rankings:
                for kind in ("paraphrase", "lexical", None):
                    scores, _ = await score(store, key_of, ranking, kind)
                    print(scores.row(f"{label} / {kind or 'all'}"))
            print("\nvector floor (min_similarity) → hybrid R@5 paraphrase / lexical")
            for floor in FLOORS:
                vectors.min_similarity = floor
                para, lex = await _both(store, key_of)
                print(f"  {floor:.2f}: {para.recall_at_5:.3f} / {lex.recall_at_5:.3f}")
            vectors.min_similarity = 0.0
            print("\nfusion (floor 0) → hybrid R@5 and MRR, paraphrase / lexical")
            for fusion in FUSIONS:
                store.fusion = fusion
                para, lex = await _both(store, key_of)
                print(
                    f"  k={fusion.k:>4.0f} vector weight {fusion.semantic_weight:.0f}: "
                    f"R@5 {para.recall_at_5:.3f} / {lex.recall_at_5:.3f}   "
                    f"MRR {para.mrr:.3f} / {lex.mrr:.3f}"
                )


async def _both(store: MemoryStore, key_of: dict[str, str]) -> tuple[Scores, Scores]:
    para, _ = await score(store, key_of, "hybrid", "paraphrase")
    lex, _ = await score(store, key_of, "hybrid", "lexical")
    return para, lex
