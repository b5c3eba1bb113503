"""The store: validation, recall order and bounds, listing, archiving."""

from __future__ import annotations

import pytest

from tests.memory.conftest import Clock
from thalos_bot.memory.records import InvalidMemoryError, new_memory
from thalos_bot.memory.schema import FTS_SHARDS, shard_table
from thalos_bot.memory.store import MemoryStore
from thalos_bot.storage.database import Database, fetch_one

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"text": "   "}, "empty"),
        ({"text": "x" * 4001}, "too long"),
        ({"kind": "Not A Slug"}, "slug"),
        ({"tags": [f"t{i}" for i in range(11)]}, "too many tags"),
        ({"tags": ["x" * 33]}, "too long"),
        ({"tags": [" "]}, "empty"),
        ({"importance": 0}, "from 1 to 5"),
        ({"importance": 6}, "from 1 to 5"),
        ({"owner": ""}, "known owner"),
    ],
)
async def test_invalid_memories_are_refused(
    store: MemoryStore, fields: dict[str, object], problem: str
) -> None:
    args: dict[str, object] = {"owner": "alice", "text": "fine"} | fields
    owner, text = str(args.pop("owner")), str(args.pop("text"))
    with pytest.raises(InvalidMemoryError, match=problem):
        await store.remember(owner, text, **args)  # type: ignore[arg-type]
    assert await store.count(None) == 0


async def test_a_memory_keeps_what_it_was_given(store: MemoryStore, clock: Clock) -> None:
    stored = await store.remember(
        "alice", "  Prefers tea.\n", kind="Preference", tags=["Food ", "food", "Drinks"]
    )
    record = stored.record
    assert record.id.startswith("m-")
    assert (record.text, record.kind, record.tags) == (
        "Prefers tea.",
        "preference",
        ("food", "drinks"),
    )
    assert record.importance == 3
    assert record.created_at == record.updated_at == clock.now
    assert record.last_recalled_at is None
    assert await store.get(record.id) == record


async def test_kinds_are_extensible_slugs(store: MemoryStore) -> None:
    stored = await store.remember("alice", "Quarterly OKR review", kind="work-goal")
    assert stored.record.kind == "work-goal"


async def test_recall_orders_by_score_then_importance_then_recency(
    store: MemoryStore, clock: Clock
) -> None:
    low = await store.remember("alice", "Pepper the dog", importance=2)
    clock.advance(hours=1)
    high = await store.remember("alice", "Biscuit the dog", importance=5)
    clock.advance(hours=1)
    newer_low = await store.remember("alice", "Rex the dog", importance=2)
    strong = await store.remember("alice", "dog dog dog walks for the dog", importance=1)
    found = [r.record.id for r in await store.recall(["alice"], "dog")]
    assert found == [strong.record.id, high.record.id, newer_low.record.id, low.record.id]


async def test_recall_is_bounded_by_top_k_and_budget(store: MemoryStore) -> None:
    for i in range(8):
        await store.remember("alice", f"Garden note {i}: " + "tomatoes " * (5 + i), kind="note")
    assert len(await store.recall(["alice"], "tomatoes garden", top_k=3)) == 3
    recalled = await store.recall(["alice"], "tomatoes garden", top_k=8, char_budget=200)
    assert 0 < len(recalled) < 8
    assert sum(len(r.record.text) for r in recalled) <= 200
    assert await store.recall(["alice"], "tomatoes", top_k=0) == []


async def test_min_score_filters_weak_matches(store: MemoryStore) -> None:
    for i in range(20):
        await store.remember("alice", f"Filler memory number {i} about the weather")
    await store.remember("alice", "Saffron risotto is the favourite dinner")
    everything = await store.recall(["alice"], "weather saffron", top_k=30)
    assert len(everything) == 21
    strong = await store.recall(["alice"], "weather saffron", top_k=30, min_score=1.0)
    assert [r.record.text for r in strong] == ["Saffron risotto is the favourite dinner"]


async def test_recall_stamps_last_recalled(store: MemoryStore, clock: Clock) -> None:
    stored = await store.remember("alice", "Cinema on Fridays")
    clock.advance(days=2)
    await store.recall(["alice"], "cinema", touch=False)
    assert (await store.get(stored.record.id)).last_recalled_at is None  # type: ignore[union-attr]
    await store.recall(["alice"], "cinema")
    record = await store.get(stored.record.id)
    assert record is not None
    assert record.last_recalled_at == clock.now
    assert record.updated_at == stored.record.updated_at


async def test_recall_sees_shared_and_own_agent_records_only(store: MemoryStore) -> None:
    await store.remember("alice", "Shared: standup at 9:30", agent=None)
    await store.remember("alice", "Coder: standup notes go in the wiki", agent="coder")
    await store.remember("alice", "Writer: standup is boring", agent="writer")
    found = {r.record.text for r in await store.recall(["alice"], "standup", agent="coder")}
    assert found == {"Shared: standup at 9:30", "Coder: standup notes go in the wiki"}
    found = {r.record.text for r in await store.recall(["alice"], "standup")}
    assert found == {"Shared: standup at 9:30"}


async def test_list_pages_newest_first_with_a_kind_filter(store: MemoryStore, clock: Clock) -> None:
    ids = []
    for i in range(5):
        clock.advance(minutes=1)
        kind = "fact" if i % 2 else "note"
        ids.append(
            (await store.remember("alice", f"Unrelated item {i} zq{i}", kind=kind)).record.id
        )
    assert [r.id for r in await store.list("alice", limit=2)] == [ids[4], ids[3]]
    assert [r.id for r in await store.list("alice", limit=2, offset=4)] == [ids[0]]
    assert [r.id for r in await store.list("alice", kind="fact")] == [ids[3], ids[1]]
    assert await store.count("alice", kind="note") == 3


async def test_archived_records_leave_recall_and_list(store: MemoryStore) -> None:
    stored = await store.remember("alice", "The spare key is under the blue pot")
    archived = await store.archive("alice", stored.record.id)
    assert archived is not None
    assert await store.recall(["alice"], "spare key") == []
    assert await store.list("alice") == []
    assert [r.id for r in await store.list("alice", include_archived=True)] == [stored.record.id]
    assert await store.archive("alice", stored.record.id) is None  # already gone


async def test_insert_many_skips_dedupe(store: MemoryStore) -> None:
    memory = new_memory("alice", "Same text twice")
    assert await store.insert_many([memory, memory]) == 2
    assert await store.count("alice") == 2


async def test_records_iterates_everything_in_batches(store: MemoryStore) -> None:
    await store.insert_many(new_memory("alice", f"item {i}") for i in range(7))
    await store.insert_many([new_memory("bob", "bob's item")])
    every = [r async for r in store.records(batch=3)]
    assert len(every) == 8
    assert [r.text for r in every][:2] == ["item 0", "item 1"]
    assert {r.owner async for r in store.records("bob", batch=3)} == {"bob"}


async def test_the_fts_index_stays_consistent(store: MemoryStore, db: Database) -> None:
    first = await store.remember("alice", "Prefers dark mode")
    await store.remember("alice", "Prefers dark mode in every editor")
    await store.remember("bob", "Some other memory")
    await store.archive("alice", first.record.id)
    await store.delete(first.record.id)
    async with db.transaction() as conn:
        for table in map(shard_table, range(FTS_SHARDS)):
            await conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)")
        row = await fetch_one(conn, "SELECT count(*) FROM memories")
    assert row is not None
    assert row[0] == 1
