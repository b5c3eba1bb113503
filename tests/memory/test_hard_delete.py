"""Forgetting that really forgets: after a hard delete no query, no FTS5 shadow table and
no byte of the database file (or its WAL) holds the text."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.memory.conftest import open_db
from thalos_bot.memory.records import new_memory
from thalos_bot.memory.schema import FTS_SHARDS, shard_table
from thalos_bot.memory.store import MemoryStore
from thalos_bot.storage.database import Database, fetch_all

pytestmark = pytest.mark.anyio

MARKER = "zanzibarquux"
TAG = "qwvxtagmark"
SECRET = f"The safe combination is hidden in {MARKER} notebook"
SECRET_STEMS = ("the", "safe", "combin", "is", "hidden", "in", MARKER, "notebook", TAG)
"""What porter makes of the secret's words and tag: no other record has any of them."""
SECRET_BYTES = tuple(t[:9].encode() for t in (MARKER, TAG, "combin", "hidden"))
"""Unique terms to look for in raw bytes. FTS5 stores a term after the first one on a
leaf as the suffix it does not share with the previous term ("notebook" after "note"
is just "book"), so only terms sharing no prefix with their neighbours are findable."""
FILLER = 600
"""More than one block of records, so the secret's shard is not the only one."""


async def _seed(store: MemoryStore) -> str:
    # Several transactions, so the FTS index has several segments to merge.
    for batch in range(4):
        await store.insert_many(
            new_memory("alice", f"Filler {batch}-{i}: groceries, errands and gardening")
            for i in range(FILLER // 4)
        )
    secret = await store.remember("alice", SECRET, tags=[TAG, "safe"])
    await store.insert_many(new_memory("bob", f"Bob's note {i} on errands") for i in range(60))
    return secret.record.id


def _has_secret(blob: object) -> bool:
    return blob is not None and any(s in bytes(blob) for s in SECRET_BYTES)  # type: ignore[call-overload]


async def _traces(db: Database) -> dict[str, int]:
    """Where the secret can still be found, by every route we know of, in every shard."""
    found: dict[str, int] = dict.fromkeys(
        ["fts-match", "vocab-row", "vocab-instance", "fts-data", "fts-idx", "memories-row"], 0
    )
    marks = ", ".join("?" for _ in SECRET_STEMS)
    async with db.transaction() as conn:
        for table in map(shard_table, range(FTS_SHARDS)):
            for kind in ("row", "instance"):
                await conn.execute(
                    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_{kind}"
                    f" USING fts5vocab(main, '{table}', '{kind}')"
                )
            queries = {
                "fts-match": (
                    f"SELECT count(*) FROM {table} WHERE {table} MATCH ?",
                    (f'"{MARKER}" OR "{TAG}" OR "combination" OR "notebook"',),
                ),
                "vocab-row": (
                    f"SELECT count(*) FROM temp.{table}_row WHERE term IN ({marks})",
                    SECRET_STEMS,
                ),
                "vocab-instance": (
                    f"SELECT count(*) FROM temp.{table}_instance WHERE term IN ({marks})",
                    SECRET_STEMS,
                ),
            }
            for name, (sql, params) in queries.items():
                rows = await fetch_all(conn, sql, params)
                found[name] += int(rows[0][0])
            for name, shadow, column in [("fts-data", "data", "block"), ("fts-idx", "idx", "term")]:
                blobs = await fetch_all(conn, f"SELECT {column} FROM {table}_{shadow}")
                found[name] += sum(1 for (blob,) in blobs if _has_secret(blob))
        rows = await fetch_all(
            conn,
            "SELECT count(*) FROM memories WHERE text LIKE ? OR tags LIKE ?",
            (f"%{MARKER}%", f"%{TAG}%"),
        )
        found["memories-row"] = int(rows[0][0])
    return found


def _in_files(path: Path) -> list[str]:
    hits = []
    for candidate in (path, path.with_name(path.name + "-wal")):
        if candidate.exists():
            data = candidate.read_bytes()
            if any(s in data for s in (*SECRET_BYTES, b"combination", b"notebook")):
                hits.append(candidate.name)
    return hits


async def test_hard_delete_leaves_no_trace(tmp_path: Path) -> None:
    path = tmp_path / "thalos.db"
    db = await open_db(path)
    store = MemoryStore(db)
    secret_id = await _seed(store)
    before = await _traces(db)
    assert before["fts-match"] == 1
    assert before["vocab-row"] == len(SECRET_STEMS)
    assert before["fts-data"] > 0, "the check must be able to see index bytes"
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
        for table in map(shard_table, range(FTS_SHARDS)):
            await conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)")
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
    assert traces["fts-data"] > 0, "FTS5 keeps the old segment until a merge"
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
