"""Dedupe: a restated memory refreshes the record it repeats instead of adding a copy.

The labelled pairs in ``dedupe_pairs.json`` show where the thresholds sit: every
duplicate is caught and every distinct pair kept apart, by the measure alone and
through the store.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.memory.conftest import Clock
from thalos_bot.config.memory import CONTAINMENT_THRESHOLD, DEDUPE_THRESHOLD
from thalos_bot.memory.store import MemoryStore
from thalos_bot.memory.text import resemblance

PAIRS = json.loads(Path(__file__).with_name("dedupe_pairs.json").read_text())
DUPLICATES = [tuple(p) for p in PAIRS["duplicates"]]
DISTINCT = [tuple(p) for p in PAIRS["distinct"]]


def _is_dup(new: str, old: str) -> bool:
    return resemblance(new, old).is_duplicate(DEDUPE_THRESHOLD, CONTAINMENT_THRESHOLD)


def test_the_thresholds_separate_the_labelled_pairs() -> None:
    missed = [p for p in DUPLICATES if not _is_dup(*p)]
    merged = [p for p in DISTINCT if _is_dup(*p)]
    closest_distinct = max(
        (resemblance(*p) for p in DISTINCT if resemblance(*p).same_polarity),
        key=lambda r: r.jaccard,
    )
    print(
        f"\ndedupe pairs: {len(DUPLICATES)} duplicates, {len(DISTINCT)} distinct; "
        f"closest distinct pair: jaccard {closest_distinct.jaccard:.2f}, "
        f"containment {closest_distinct.containment:.2f}"
    )
    assert missed == []
    assert merged == []


@pytest.mark.anyio
@pytest.mark.parametrize(("new", "old"), DUPLICATES)
async def test_a_restatement_refreshes_the_record(
    store: MemoryStore, clock: Clock, new: str, old: str
) -> None:
    first = await store.remember("alice", old, kind="fact", tags=["a"], importance=2)
    clock.advance(days=3)
    again = await store.remember("alice", new, tags=["b"], importance=4)
    assert again.deduped
    assert again.record.id == first.record.id
    assert again.record.updated_at == clock.now
    assert again.record.created_at == first.record.created_at
    assert again.record.importance == 4
    assert again.record.tags == ("a", "b")
    assert again.record.kind == "fact"
    assert await store.count("alice") == 1


@pytest.mark.anyio
@pytest.mark.parametrize(("new", "old"), DISTINCT)
async def test_a_different_fact_is_stored_alongside(store: MemoryStore, new: str, old: str) -> None:
    await store.remember("alice", old)
    again = await store.remember("alice", new)
    assert not again.deduped
    assert await store.count("alice") == 2


@pytest.mark.anyio
async def test_the_newest_wording_wins_and_the_fuller_text_is_kept(store: MemoryStore) -> None:
    first = await store.remember("alice", "Prefers dark mode in every editor and terminal")
    shorter = await store.remember("alice", "Prefers dark mode")
    assert shorter.deduped
    assert shorter.record.text == first.record.text  # the contained one adds nothing
    reworded = await store.remember("alice", "Prefers dark mode in every editor and terminal!")
    assert reworded.record.text == "Prefers dark mode in every editor and terminal!"
    fuller = await store.remember(
        "alice", "Prefers dark mode in every editor and terminal, with a large font"
    )
    assert fuller.deduped
    assert fuller.record.text.endswith("with a large font")


@pytest.mark.anyio
async def test_the_index_follows_a_refreshed_text(store: MemoryStore) -> None:
    await store.remember("alice", "Mia is allergic to peanuts")
    await store.remember("alice", "Mia, Alice's daughter, is allergic to peanuts and tree nuts")
    assert [r.record.text for r in await store.recall(["alice"], "tree nuts")] == [
        "Mia, Alice's daughter, is allergic to peanuts and tree nuts"
    ]


@pytest.mark.anyio
async def test_dedupe_stays_within_owner_agent_scope_and_live_records(store: MemoryStore) -> None:
    text = "Prefers replies in British English"
    mine = await store.remember("alice", text)
    assert not (await store.remember("bob", text)).deduped
    assert not (await store.remember("alice", text, agent="coder")).deduped
    assert (await store.remember("alice", text, agent="coder")).deduped
    await store.archive("alice", mine.record.id)
    assert not (await store.remember("alice", text)).deduped


@pytest.mark.anyio
async def test_tags_merge_but_stay_within_the_limit(store: MemoryStore) -> None:
    await store.remember(
        "alice", "Runs 5 km three mornings a week", tags=[f"a{i}" for i in range(8)]
    )
    again = await store.remember(
        "alice", "Runs 5 km three mornings a week", tags=[f"b{i}" for i in range(8)]
    )
    assert again.deduped
    assert len(again.record.tags) == 10
    assert again.record.tags[:8] == tuple(f"a{i}" for i in range(8))


@pytest.mark.anyio
async def test_concurrent_restatements_make_one_record(store: MemoryStore) -> None:
    async with anyio.create_task_group() as group:
        for _ in range(6):
            group.start_soon(store.remember, "alice", "Waters the tomatoes every second day")
    assert await store.count("alice") == 1


@pytest.mark.anyio
async def test_with_vectors_every_pair_is_still_judged_right(embedded_store: MemoryStore) -> None:
    """Averaged word vectors put "Monday"/"Tuesday" and "Alice reports to Bob"/"Bob
    reports to Alice" at a cosine near 1: the guards keep such pairs apart."""
    for n, (new, old) in enumerate(DUPLICATES):
        first = await embedded_store.remember(f"dup-{n}", old)
        again = await embedded_store.remember(f"dup-{n}", new)
        assert again.deduped, (new, old)
        assert again.record.id == first.record.id
    for n, (new, old) in enumerate(DISTINCT):
        await embedded_store.remember(f"distinct-{n}", old)
        again = await embedded_store.remember(f"distinct-{n}", new)
        assert not again.deduped, (new, old)
