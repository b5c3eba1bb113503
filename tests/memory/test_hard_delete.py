"""Forgetting that really forgets: after a hard delete no query, no FTS5 shadow table and
no byte of the database file (or its WAL) holds the text."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.memory.conftest import open_db
from thalos_bot.memory.records import new_memory
from thalos_bot.memory.store import MemoryStore
from thalos_bot.storage.database import Database, fetch_all

pytestmark = pytest.mark.anyio

MARKER = "zanzibarquux"
TAG = "qwvxtagmark"
SECRET = f"The safe combination is hidden in {MARKER} notebook"


async def _seed(store: MemoryStore) -> str:
    # Several transactions, so the FTS index has several segments to merge.
    for batch in range(4):
        await store.insert_many(
            new_memory("alice", f"Filler {batch}-{i}: groceries, errands and gardening")
            for i in range(60)
        )
    secret = await store.remember("alice", SECRET, tags=[TAG, "safe"])
    await store.insert_many(new_memory("bob", f"Bob's note {i} on errands") for i in range(60))
    return secret.record.id


async def _traces(db: Database) -> dict[str, int]:
    """Where the marker can still be found, by every route we know of."""
    found: dict[str, int] = {}
    async with db.transaction() as conn:
        await conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab_row"
            " USING fts5vocab(main, 'memories_fts', 'row')"
        )
        await conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab_instance"
            " USING fts5vocab(main, 'memories_fts', 'instance')"
        )
        queries = {
            "fts-match": (
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?",
                (f'"{MARKER}" OR "{TAG}"',),
            ),
            "vocab-row": (
                "SELECT count(*) FROM temp.vocab_row WHERE term LIKE ? OR term LIKE ?",
                (f"{MARKER[:9]}%", f"{TAG[:8]}%"),
            ),
            "vocab-instance": (
                "SELECT count(*) FROM temp.vocab_instance WHERE term LIKE ?",
                (f"{MARKER[:9]}%",),
            ),
            "memories-row": (
                "SELECT count(*) FROM memories WHERE text LIKE ? OR tags LIKE ?",
                (f"%{MARKER}%", f"%{TAG}%"),
            ),
        }
        for name, (sql, params) in queries.items():
            rows = await fetch_all(conn, sql, params)
            found[name] = int(rows[0][0])
        for table, column in [("memories_fts_data", "block"), ("memories_fts_idx", "term")]:
            blobs = await fetch_all(conn, f"SELECT {column} FROM {table}")
            found[table] = sum(
                1
                for (blob,) in blobs
                if blob is not None
                and (MARKER[:9].encode() in bytes(blob) or TAG[:8].encode() in bytes(blob))
            )
    return found


def _in_files(path: Path) -> list[str]:
    hits = []
    for candidate in (path, path.with_name(path.name + "-wal")):
        if candidate.exists():
            data = candidate.read_bytes()
            if MARKER[:9].encode() in data or TAG[:8].encode() in data:
                hits.append(candidate.name)
    return hits


async def test_hard_delete_leaves_no_trace(tmp_path: Path) -> None:
    path = tmp_path / "thalos.db"
    db = await open_db(path)
    store = MemoryStore(db)
    secret_id = await _seed(store)
    before = await _traces(db)
    assert before["fts-match"] == 1
    assert before["vocab-row"] == 2
    assert before["memories_fts_data"] > 0, "the check must be able to see index bytes"
    async with db.transaction() as conn:
        # Some SQLite builds default secure_delete on; the store must not rely on that.
        await conn.execute("PRAGMA secure_delete = OFF")

    assert await store.delete(secret_id)

    assert await _traces(db) == dict.fromkeys(before, 0)
    assert await store.get(secret_id) is None
    assert _in_files(path) == [], "the running database keeps no copy (file or WAL)"
    remaining = await store.recall(["alice"], "groceries errands", top_k=3)
    assert len(remaining) == 3, "other records are untouched"
    async with db.transaction() as conn:
        await conn.execute(
            "INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)"
        )
    await db.aclose()
    assert _in_files(path) == []


async def test_a_naive_delete_would_leave_the_text_behind(tmp_path: Path) -> None:
    """The control: without what :meth:`MemoryStore.delete` adds, the bytes survive, so
    the byte check above can tell the difference."""
    path = tmp_path / "thalos.db"
    db = await open_db(path)
    store = MemoryStore(db)
    secret_id = await _seed(store)
    async with db.transaction() as conn:
        await conn.execute("PRAGMA secure_delete = OFF")
        await conn.execute("DELETE FROM memories WHERE id = ?", (secret_id,))
    traces = await _traces(db)
    assert traces["fts-match"] == 0
    assert traces["memories_fts_data"] > 0, "FTS5 keeps the old segment until a merge"
    await db.aclose()
    assert _in_files(path) != []


async def test_delete_can_be_limited_to_one_owner(store: MemoryStore) -> None:
    stored = await store.remember("alice", SECRET)
    assert not await store.delete(stored.record.id, owner="bob")
    assert await store.get(stored.record.id) is not None
    assert await store.delete(stored.record.id, owner="alice")
    assert not await store.delete(stored.record.id)


async def test_archived_records_can_be_hard_deleted(store: MemoryStore, db: Database) -> None:
    stored = await store.remember("alice", SECRET, tags=[TAG])
    await store.archive("alice", stored.record.id)
    assert (await _traces(db))["fts-match"] == 1, "archiving keeps the text (it is not forgetting)"
    assert await store.delete(stored.record.id)
    assert set((await _traces(db)).values()) == {0}


async def test_in_memory_databases_delete_too() -> None:
    async with await open_db(":memory:") as db:
        store = MemoryStore(db)
        stored = await store.remember("alice", SECRET)
        assert await store.delete(stored.record.id)
        assert set((await _traces(db)).values()) == {0}
