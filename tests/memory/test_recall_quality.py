"""Recall quality on the labelled set (``recall_set.json``, see :mod:`tests.memory.labelled`):
308 memories a personal assistant might hold (distractors among them), 179 messages with
the memories that should come back; 92 of them paraphrase their target with no search
term in common, a few in other languages.

The floors sit a little below the measured figures (``bench/memory.py --quality``) so a
regression fails: BM25 alone finds none of the paraphrases by construction; the
embedded WordLlama model finds about half of them; hybrid recall must be no worse than
BM25 on the lexical queries.
"""

from __future__ import annotations

import sqlite3

import pytest

from tests.memory.labelled import DATA, load, score
from thalos_bot.memory.store import MemoryStore
from thalos_bot.memory.text import fts_or_query

pytestmark = pytest.mark.anyio

LEXICAL_FLOOR = 0.9
PARAPHRASE_FLOOR = 0.45


def test_the_set_is_as_large_and_as_hard_as_it_says() -> None:
    memories = {m["key"]: m for m in DATA["memories"]}
    paraphrases = [q for q in DATA["queries"] if q["kind"] == "paraphrase"]
    assert len(memories) == len(DATA["memories"]) >= 300
    assert len(DATA["queries"]) >= 150
    assert len(paraphrases) * 2 >= len(DATA["queries"])
    assert sum(1 for k in memories if k.startswith("x-")) >= 35
    # A paraphrase shares no search term with what it expects, as FTS5 itself sees it.
    fts = sqlite3.connect(":memory:")
    fts.execute(
        "CREATE VIRTUAL TABLE f USING fts5 (text, tags,"
        " tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    overlapping = []
    for case in paraphrases:
        match = fts_or_query(case["query"])
        for key in case["expected"]:
            fts.execute("DELETE FROM f")
            fts.execute("INSERT INTO f VALUES (?, ?)", (memories[key]["text"], ""))
            if match and fts.execute("SELECT 1 FROM f WHERE f MATCH ?", (match,)).fetchone():
                overlapping.append((case["query"], key))
    assert overlapping == []


async def test_bm25_alone_keeps_its_lexical_recall(store: MemoryStore) -> None:
    key_of = await load(store)
    lexical, misses = await score(store, key_of, "lexical", "lexical")
    paraphrase, _ = await score(store, key_of, "lexical", "paraphrase")
    print("", lexical.row("bm25/lexical"), paraphrase.row("bm25/paraphrase"), *misses, sep="\n")
    assert lexical.recall_at_5 >= LEXICAL_FLOOR
    assert paraphrase.recall_at_5 == 0.0


async def test_hybrid_recall_finds_paraphrases_and_loses_no_lexical_hit(
    embedded_store: MemoryStore,
) -> None:
    store = embedded_store
    key_of = await load(store)
    bm25, _ = await score(store, key_of, "lexical", "lexical")
    lexical, _ = await score(store, key_of, "hybrid", "lexical")
    paraphrase, _ = await score(store, key_of, "hybrid", "paraphrase")
    print("", lexical.row("hybrid/lexical"), paraphrase.row("hybrid/paraphrase"), sep="\n")
    assert lexical.recall_at_5 >= bm25.recall_at_5
    assert paraphrase.recall_at_5 >= PARAPHRASE_FLOOR
