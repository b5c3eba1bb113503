"""The daemon's background embedding of pending memories tells how it goes: a
``memory_reindex_progress`` event with done/total every tenth of the way, and the
``memory-reindex`` row of ``task_progress`` (what ``thalos-bot status`` reads), which
also says how a pass ended. A pass that is cancelled keeps what it embedded, and the
next one continues with the pending rows."""

from __future__ import annotations

import anyio
import pytest
from structlog.testing import capture_logs

from tests.memory.conftest import SwitchableEmbedder
from thalos_bot.memory.records import NewMemory
from thalos_bot.memory.reindex import Reindexer, ReindexReport
from thalos_bot.memory.store import MemoryStore
from thalos_bot.memory.vectors import VectorIndex
from thalos_bot.storage.database import Database
from thalos_bot.storage.progress import MEMORY_REINDEX, read_progress

pytestmark = pytest.mark.anyio


async def seed(db: Database, count: int) -> None:
    memories = (NewMemory("alice", f"Note {n} about the {n % 5} orchard") for n in range(count))
    assert await MemoryStore(db).insert_many(memories) == count


async def test_the_background_pass_logs_progress_and_records_it(
    db: Database, embedder: SwitchableEmbedder
) -> None:
    await seed(db, 50)
    passes: list[ReindexReport | None] = []
    finished = anyio.Event()

    def heard(report: ReindexReport | None) -> None:
        passes.append(report)
        finished.set()

    reindexer = Reindexer(db, VectorIndex(embedder), batch=10, on_pass=heard)
    with capture_logs() as logs:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(reindexer.run)
            await finished.wait()
            tasks.cancel_scope.cancel()
    progress = [e for e in logs if e["event"] == "memory_reindex_progress"]
    assert [(e["done"], e["total"]) for e in progress] == [(n, 50) for n in (10, 20, 30, 40, 50)]
    assert all(e["log_level"] == "info" for e in progress)
    assert passes == [ReindexReport(50, 0, embedder.model)]
    (row,) = await read_progress(db, MEMORY_REINDEX)
    assert (row.state, row.done, row.total, row.detail) == ("done", 50, 50, "pending")


async def test_a_pass_within_one_batch_logs_no_progress_events(
    db: Database, embedder: SwitchableEmbedder
) -> None:
    await seed(db, 3)
    with capture_logs() as logs:
        report = await Reindexer(db, VectorIndex(embedder), batch=10).reindex()
    assert report.embedded == 3
    assert not [e for e in logs if e["event"] == "memory_reindex_progress"]


async def test_a_cancelled_pass_is_recorded_and_the_next_continues(
    db: Database, embedder: SwitchableEmbedder
) -> None:
    await seed(db, 50)
    reindexer = Reindexer(db, VectorIndex(embedder), batch=10)
    heard: list[tuple[int, int]] = []
    async with anyio.create_task_group() as tasks:

        def stop_after_two(done: int, total: int) -> None:
            heard.append((done, total))
            if done >= 20:
                tasks.cancel_scope.cancel()

        tasks.start_soon(lambda: reindexer.reindex(on_progress=stop_after_two))
    assert heard == [(0, 50), (10, 50), (20, 50)]
    (row,) = await read_progress(db, MEMORY_REINDEX)
    assert (row.state, row.done, row.total) == ("interrupted", 20, 50)
    assert await reindexer.pending_count() == 30

    calls = embedder.calls
    report = await reindexer.reindex()
    assert (report.embedded, report.pending) == (30, 0)
    assert embedder.calls - calls == 3, "only the pending rows, in batches of 10"
    (row,) = await read_progress(db, MEMORY_REINDEX)
    assert (row.state, row.done, row.total) == ("done", 30, 30)


async def test_a_failing_embedder_is_recorded_as_failed(
    db: Database, embedder: SwitchableEmbedder
) -> None:
    await seed(db, 5)
    embedder.failing = True
    with pytest.raises(Exception, match="outage"):
        await Reindexer(db, VectorIndex(embedder), batch=10).reindex()
    (row,) = await read_progress(db, MEMORY_REINDEX)
    assert (row.state, row.done, row.total) == ("failed", 0, 5)


async def test_nothing_pending_leaves_the_last_row_alone(
    db: Database, embedder: SwitchableEmbedder
) -> None:
    await seed(db, 5)
    reindexer = Reindexer(db, VectorIndex(embedder), batch=10)
    await reindexer.reindex()
    (before,) = await read_progress(db, MEMORY_REINDEX)
    assert (await reindexer.reindex()).embedded == 0
    assert await read_progress(db, MEMORY_REINDEX) == [before]
