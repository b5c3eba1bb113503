"""A daemon's vector mirror follows what another process writes to the same file (the
``thalos-bot memory`` commands next to a running daemon), without a restart."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.memory.conftest import Clock, SwitchableEmbedder, open_db
from thalos_bot.memory.store import MemoryStore
from thalos_bot.memory.vectors import VectorIndex

pytestmark = pytest.mark.anyio

TEA = "Sam starts every day with a pot of jasmine tea before work."
DOG = "The family dog is a border collie called Pepper."
PARAPHRASE = "What hot drink do I have when I wake up?"


async def test_a_record_another_process_added_is_found_by_meaning(
    tmp_path: Path, clock: Clock
) -> None:
    path = tmp_path / "shared.db"
    async with await open_db(path) as daemon_db, await open_db(path) as cli_db:
        daemon = MemoryStore(daemon_db, clock=clock, vectors=VectorIndex(SwitchableEmbedder()))
        cli = MemoryStore(cli_db, clock=clock, vectors=VectorIndex(SwitchableEmbedder()))
        await daemon.remember("alice", DOG)
        assert await daemon.recall(["alice"], "my pet", ranking="semantic") != []  # warm

        added = await cli.remember("alice", TEA)
        with capture_logs() as logs:
            found = await daemon.recall(["alice"], PARAPHRASE, ranking="semantic")
        assert found[0].record.id == added.record.id
        assert "memory-mirror-reloaded" in [e["event"] for e in logs]

        assert await cli.delete(added.record.id)
        found = await daemon.recall(["alice"], PARAPHRASE, ranking="semantic")
        assert added.record.id not in [r.record.id for r in found]


async def test_the_daemons_own_writes_keep_the_mirror(tmp_path: Path, clock: Clock) -> None:
    async with await open_db(tmp_path / "own.db") as db:
        store = MemoryStore(db, clock=clock, vectors=VectorIndex(SwitchableEmbedder()))
        await store.remember("alice", DOG)
        assert await store.recall(["alice"], "my pet", ranking="semantic") != []
        with capture_logs() as logs:
            tea = await store.remember("alice", TEA)
            found = await store.recall(["alice"], PARAPHRASE, ranking="semantic")
        assert found[0].record.id == tea.record.id
        assert "memory-mirror-reloaded" not in [e["event"] for e in logs]  # kept in step
