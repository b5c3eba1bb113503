"""Words, FTS5 queries built from hostile text, and the resemblance measure."""

from __future__ import annotations

import random

import pytest

from thalos_bot.memory.schema import FTS_SHARDS, shard_table
from thalos_bot.memory.store import MemoryStore
from thalos_bot.memory.text import (
    content_words,
    fts_or_query,
    fts_phrase,
    query_terms,
    resemblance,
    words,
)
from thalos_bot.storage.database import Database, fetch_all

HOSTILE = [
    'he said "hi" and left',
    '"unterminated',
    "a AND b OR NOT c",
    "NEAR(a b, 3)",
    "NEAR/2",
    "text:secret",
    "tags : x",
    "{text tags}: cats",
    "- cats",
    "^start",
    "prefix*",
    "*",
    "(((",
    ")",
    "col:*",
    "'; DROP TABLE memories; --",
    "\x00null\x00byte",
    "emoji 🐈‍⬛ and ZWJ",
    "ＮＥＡＲ（ｃａｔｓ　ｄｏｇｓ）",
    "AND",
    "OR OR OR",
    '""""',
    "a\u2028b\u2029c",
    "rowid = 1",
    "memories_fts",
    "under_score_words",
    "___",
    "x" * 5000,
]


def test_words_normalise_case_width_and_diacritics() -> None:
    assert words("Café ＣＲÈＭＥ brûlée, naïve!") == ["cafe", "creme", "brulee", "naive"]


def test_query_terms_drop_filler_and_repeats_and_keep_order() -> None:
    assert query_terms("Hi! Can you please tell me what my dog's vet is called? The vet!") == [
        "dog",
        "vet",
        "called",
    ]


def test_query_terms_are_capped() -> None:
    text = " ".join(f"word{i}" for i in range(100))
    assert len(query_terms(text)) == 32


def test_every_term_is_quoted_so_operators_are_plain_words() -> None:
    query = fts_or_query("cats NEAR dogs AND text:birds*")
    assert query == '"cats" OR "near" OR "dogs" OR "text" OR "birds"'
    assert fts_phrase('say "x"') == '"say ""x"""'


@pytest.mark.parametrize("text", ["", "   ", "?!", "the and of", "***", "\u200b"])
def test_no_usable_term_means_no_query(text: str) -> None:
    assert fts_or_query(text) is None


@pytest.mark.anyio
@pytest.mark.parametrize("text", HOSTILE)
async def test_hostile_text_never_breaks_fts(store: MemoryStore, db: Database, text: str) -> None:
    await store.remember("alice", "cats and dogs near the secret garden")
    await store.recall(["alice"], text)  # must not raise
    await store.remember("alice", text[:4000])  # the dedupe search too
    query = fts_or_query(text)
    if query is not None:
        async with db.read() as conn:
            for table in map(shard_table, range(FTS_SHARDS)):
                await fetch_all(
                    conn,
                    f"SELECT rowid FROM {table} WHERE {table} MATCH ?",
                    (query,),
                )


@pytest.mark.anyio
async def test_random_punctuation_soup_never_breaks_fts(store: MemoryStore) -> None:
    rng = random.Random(6)
    alphabet = [*"\"'*:^-+(){}[],.;/\\|&!?<>=~`@#$%", "NEAR", "AND", "OR", "NOT", "cat"]
    await store.remember("alice", "a cat sat on the mat")
    for _ in range(200):
        text = "".join(rng.choice(alphabet) + rng.choice(["", " "]) for _ in range(12))
        await store.recall(["alice"], text, touch=False)


def test_content_words_fold_plurals_and_drop_function_words() -> None:
    assert content_words("The allergies of my dogs") == ["allergy", "dog"]


def test_resemblance_is_order_sensitive() -> None:
    assert not resemblance("Alice reports to Bob", "Bob reports to Alice").is_duplicate(0.6, 0.8)


def test_negation_is_never_a_duplicate() -> None:
    similar = resemblance("Likes coffee in the morning", "Doesn't like coffee in the morning")
    assert similar.jaccard == 1.0
    assert not similar.same_polarity
    assert not similar.is_duplicate(0.6, 0.8)
