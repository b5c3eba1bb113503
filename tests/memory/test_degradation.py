"""When the embedder is off or failing: remember still stores (index-pending, with a
``memory-index-pending`` event), recall falls back to BM25, ``reindex`` repairs, the
daemon's background task retries, and a model change never mixes two models' vectors."""

from __future__ import annotations

import anyio
import pytest
from structlog.testing import capture_logs

from tests.memory.conftest import Clock, SwitchableEmbedder
from thalos_bot.memory.reindex import Reindexer, ReindexReport
from thalos_bot.memory.store import MemoryStore
from thalos_bot.memory.vectors import VectorIndex
from thalos_bot.storage.database import Database, fetch_all, fetch_one

pytestmark = pytest.mark.anyio

TEA = "Sam starts every day with a pot of jasmine tea before work."
PARAPHRASE = "What hot drink do I have when I wake up?"


async def pending(db: Database) -> int:
    async with db.read() as conn:
        row = await fetch_one(conn, "SELECT count(*) FROM memory_index_pending")
    assert row is not None
    return int(row[0])


async def models(db: Database) -> list[str]:
    async with db.read() as conn:
        rows = await fetch_all(conn, "SELECT model FROM memory_vectors ORDER BY seq")
    return [str(r[0]) for r in rows]


async def test_a_failing_embedder_leaves_the_record_pending_and_bm25_working(
    embedded_store: MemoryStore, embedder: SwitchableEmbedder, db: Database
) -> None:
    embedder.failing = True
    with capture_logs() as logs:
        stored = await embedded_store.remember("alice", TEA)
    assert stored.index_pending
    assert await embedded_store.get(stored.record.id) is not None
    assert any(e["event"] == "memory-index-pending" for e in logs)
    assert TEA not in str(logs)
    assert await pending(db) == 1

    by_words = await embedded_store.recall(["alice"], "jasmine tea?")
    assert [r.record.id for r in by_words] == [stored.record.id]
    assert await embedded_store.recall(["alice"], PARAPHRASE) == []

    embedder.failing = False
    report = await Reindexer(db, embedded_store.vectors).reindex()  # type: ignore[arg-type]
    assert (report.embedded, report.pending) == (1, 0)
    found = await embedded_store.recall(["alice"], PARAPHRASE)
    assert [r.record.id for r in found] == [stored.record.id]


async def test_the_background_task_retries_until_the_embedder_is_back(
    embedded_store: MemoryStore, embedder: SwitchableEmbedder, db: Database
) -> None:
    vectors = embedded_store.vectors
    assert vectors is not None
    passes: list[ReindexReport | None] = []
    failed, caught_up = anyio.Event(), anyio.Event()

    def heard(report: ReindexReport | None) -> None:
        passes.append(report)
        if report is None:
            failed.set()
        elif report.pending == 0 and report.embedded:
            caught_up.set()

    reindexer = Reindexer(db, vectors, first_retry=0.01, on_pass=heard)
    embedded_store._on_pending = reindexer.wake
    embedder.failing = True
    await embedded_store.remember("alice", TEA)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(reindexer.run)
            await failed.wait()
            embedder.failing = False
            await caught_up.wait()
            tasks.cancel_scope.cancel()
    assert passes[-1] is not None
    assert await pending(db) == 0
    assert [r.record.text for r in await embedded_store.recall(["alice"], PARAPHRASE)] == [TEA]


async def test_with_no_embedder_nothing_is_ever_pending(db: Database, clock: Clock) -> None:
    store = MemoryStore(db, clock=clock)
    stored = await store.remember("alice", TEA)
    assert not stored.index_pending
    assert await pending(db) == 0


async def test_changing_the_model_reindexes_everything_and_never_mixes_vectors(
    embedded_store: MemoryStore, db: Database, clock: Clock
) -> None:
    await embedded_store.remember("alice", TEA)
    await embedded_store.remember("alice", "Owns a border collie called Pepper.")
    old = await models(db)
    assert len(old) == 2
    assert len(set(old)) == 1

    newer = SwitchableEmbedder(model_suffix="-v2")
    vectors = VectorIndex(newer)
    store = MemoryStore(db, clock=clock, vectors=vectors)
    assert await vectors.reconcile(db) == 2
    assert await models(db) == []
    # Until reindexed, recall finds by keywords only and never compares across models.
    assert [r.record.text for r in await store.recall(["alice"], "jasmine")] == [TEA]
    assert await store.recall(["alice"], PARAPHRASE) == []
    report = await Reindexer(db, vectors).reindex()
    assert report.embedded == 2
    assert set(await models(db)) == {newer.model}
    assert [r.record.text for r in await store.recall(["alice"], PARAPHRASE)][:1] == [TEA]


async def test_a_full_reindex_replaces_every_vector(
    embedded_store: MemoryStore, db: Database
) -> None:
    await embedded_store.remember("alice", TEA)
    vectors = embedded_store.vectors
    assert vectors is not None
    report = await Reindexer(db, vectors).reindex(pending_only=False)
    assert (report.embedded, report.pending) == (1, 0)
    assert len(await models(db)) == 1


async def test_archive_and_delete_take_the_vector_out_of_recall(
    embedded_store: MemoryStore, db: Database
) -> None:
    kept = await embedded_store.remember("alice", TEA)
    await embedded_store.archive("alice", kept.record.id)
    assert await embedded_store.recall(["alice"], PARAPHRASE) == []
    again = await embedded_store.remember("alice", "Has a pot of jasmine tea at dawn each day.")
    assert await embedded_store.delete(again.record.id)
    assert await embedded_store.recall(["alice"], PARAPHRASE) == []
    assert len(await models(db)) == 1  # the archived record's, the deleted one's is gone
