"""The word index is split into FTS5 shards so forgetting rewrites one small index, not
the whole one: recall still ranks across every shard, the term budget counts documents
in all of them, and a database built with the single index moves over with nothing
lost and nothing left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.memory.conftest import T0, open_db
from thalos_bot.memory import index
from thalos_bot.memory.index import Fts5Index, _sample, _shards_from
from thalos_bot.memory.records import new_memory
from thalos_bot.memory.schema import (
    FTS_BLOCK,
    FTS_SHARDS,
    shard_of,
    shard_table,
    vocab_table,
    with_memory,
)
from thalos_bot.memory.store import MemoryStore
from thalos_bot.storage.database import Database, encode_time, fetch_all, fetch_one

pytestmark = pytest.mark.anyio

SPREAD = FTS_BLOCK + 100
"""Records enough to fill the first shard and start the second."""


async def _spread(store: MemoryStore) -> None:
    await store.insert_many(
        new_memory("alice", f"Walks the dog every morning, route {n}") for n in range(SPREAD)
    )


async def _docs(db: Database, shard: int, term: str) -> int:
    async with db.read() as conn:
        row = await fetch_one(
            conn,
            f"SELECT doc FROM {vocab_table(shard)} WHERE term = ?",
            (term,),
        )
    return int(row[0]) if row is not None else 0


async def test_records_go_to_shards_by_block(store: MemoryStore, db: Database) -> None:
    await _spread(store)
    assert [await _docs(db, shard, "dog") for shard in range(3)] == [FTS_BLOCK - 1, 101, 0]
    assert shard_of(FTS_BLOCK - 1) == 0
    assert shard_of(FTS_BLOCK) == 1
    assert shard_of(FTS_BLOCK * FTS_SHARDS) == 0


async def test_recall_ranks_across_shards(store: MemoryStore) -> None:
    early = await store.remember("alice", "The saffron risotto recipe uses a good stock")
    await _spread(store)
    late = await store.remember("alice", "Saffron is kept in the blue tin")
    assert shard_of(1) != shard_of(SPREAD + 2), "the two records sit in different shards"
    found = await store.recall(["alice"], "saffron risotto", touch=False)
    assert [r.record.id for r in found] == [early.record.id, late.record.id]
    found = await store.recall(["alice"], "blue tin saffron", touch=False)
    assert [r.record.id for r in found][:2] == [late.record.id, early.record.id]


async def test_the_budget_counts_documents_in_every_shard(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Either shard alone holds fewer than the budget; both together do not.
    monkeypatch.setattr(index, "MATCH_BUDGET", FTS_BLOCK)
    await _spread(store)
    async with store.database.read() as conn:
        kept, since, last = await Fts5Index()._affordable(conn, ["morning"])
    assert kept == ["morning"]
    assert last == SPREAD
    assert 0 < since < FTS_BLOCK


async def test_deleting_rewrites_only_the_shard_that_held_the_record(
    store: MemoryStore, db: Database
) -> None:
    await _spread(store)
    victim = await store.remember("alice", "A note in the second shard")
    assert await store.delete(victim.record.id)  # optimizes the second shard

    async def pages(shard: int) -> list[tuple[int, bytes]]:
        async with db.read() as conn:
            rows = await fetch_all(conn, f"SELECT id, block FROM {shard_table(shard)}_data")
        return [(int(r[0]), bytes(r[1])) for r in rows]

    first = await pages(0)
    other = await store.remember("alice", "Another note in the second shard")
    assert await store.delete(other.record.id)
    assert await pages(0) == first, "the first shard was not rewritten"
    assert await store.recall(["alice"], "another note", touch=False) == []


def test_a_window_of_new_records_asks_only_the_shards_that_hold_them() -> None:
    assert _shards_from(0, 10 * FTS_BLOCK) == list(range(FTS_SHARDS))
    assert _shards_from(3 * FTS_BLOCK + 5, 4 * FTS_BLOCK + 1) == [3, 4]
    wrapped = _shards_from((FTS_SHARDS - 1) * FTS_BLOCK, (FTS_SHARDS + 1) * FTS_BLOCK)
    assert wrapped == [0, 1, FTS_SHARDS - 1]
    assert _shards_from(FTS_BLOCK, (FTS_SHARDS + 5) * FTS_BLOCK) == list(range(FTS_SHARDS))


def test_counts_come_from_every_shard_then_from_a_sample_of_full_ones() -> None:
    assert _sample(10) == ([0], 1.0)
    assert _sample(FTS_BLOCK + 10) == ([0, 1], 1.0)
    shards, scale = _sample(3 * FTS_BLOCK + 10)
    assert shards == [1, 2]  # the two newest complete blocks
    assert scale == (3 * FTS_BLOCK + 10) / (2 * FTS_BLOCK)
    shards, scale = _sample(FTS_SHARDS * FTS_BLOCK * 3)  # three rounds of the shards
    assert len(shards) == 2
    assert scale == FTS_SHARDS / 2


async def test_a_single_index_database_moves_to_shards(tmp_path: Path) -> None:
    """A database written before the shards: the records are indexed again from
    ``memories``, and the old index leaves no bytes behind once a record is forgotten."""
    path = tmp_path / "thalos.db"
    before = [m for m in with_memory() if m.name != "0310_memory_fts_shards"]
    async with await Database.open(path, migrations=before) as old:
        async with old.transaction() as conn:
            for n in range(SPREAD):
                text = "The vault code is kept in the quoxbridge ledger" if n == 7 else f"note {n}"
                await conn.execute(
                    "INSERT INTO memories (id, owner, kind, text, created_at, updated_at)"
                    " VALUES (?, 'alice', 'note', ?, ?, ?)",
                    (f"m-{n:012x}", text, encode_time(T0), encode_time(T0)),
                )
        async with old.read() as conn:
            row = await fetch_one(conn, "SELECT count(*) FROM memories_fts_data")
        assert row is not None
        assert row[0] > 0

    db = await open_db(path)
    try:
        store = MemoryStore(db)
        async with db.read() as conn:
            tables = await fetch_all(
                conn, "SELECT name FROM sqlite_master WHERE name LIKE 'memories_fts%'"
            )
        assert "memories_fts" not in {r[0] for r in tables}
        [found] = await store.recall(["alice"], "quoxbridge ledger", touch=False)
        assert found.record.id == f"m-{7:012x}"
        assert len(await store.recall(["alice"], f"note {SPREAD - 1}", top_k=50)) == 50
        assert await store.delete(found.record.id)
        assert await store.recall(["alice"], "quoxbridge", touch=False) == []
    finally:
        await db.aclose()
    assert b"quoxbridge" not in path.read_bytes()


async def test_a_word_remembered_after_a_search_missed_it_is_found(store: MemoryStore) -> None:
    await _spread(store)
    assert await store.recall(["alice"], "zephyrine", touch=False) == []
    cat = await store.remember("alice", "Zephyrine is the name of the cat")
    [found] = await store.recall(["alice"], "zephyrine", touch=False)
    assert found.record.id == cat.record.id


async def _old_key(store: MemoryStore) -> str:
    """A record in the first shard, and enough after it that the first is not one of
    the newest shards."""
    key = await store.remember("alice", "Keeps the spare key under the blue pot")
    await store.insert_many(
        new_memory("alice", f"Errand list number {n}") for n in range(2 * FTS_BLOCK + 10)
    )
    assert await store.recall(["alice"], "marigold", touch=False) == []
    return key.record.id


async def test_a_changed_text_in_an_old_shard_is_found(store: MemoryStore) -> None:
    key = await _old_key(store)
    moved = await store.remember("alice", "Keeps the spare key under the blue marigold pot")
    assert moved.deduped, "the old record took the new wording"
    [found] = await store.recall(["alice"], "marigold", touch=False)
    assert found.record.id == key


async def test_what_another_process_wrote_is_found(tmp_path: Path) -> None:
    path = tmp_path / "thalos.db"
    async with await open_db(path) as db, await open_db(path) as other:
        store, cli = MemoryStore(db), MemoryStore(other)
        key = await _old_key(store)
        moved = await cli.remember("alice", "Keeps the spare key under the blue marigold pot")
        assert moved.deduped
        [found] = await store.recall(["alice"], "marigold", touch=False)
        assert found.record.id == key
        added = await cli.remember("alice", "The quillonbar is the tall bookcase")
        [found] = await store.recall(["alice"], "quillonbar", touch=False)
        assert found.record.id == added.record.id
