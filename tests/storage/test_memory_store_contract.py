"""The memory store's rules on both engines: the SQLite file and a real PostgreSQL.

The same assertions run against :class:`MemoryStore` and :class:`PgMemoryStore`, with
the real WordLlama embedder, so recall by words, by meaning and fused, dedupe, owner
isolation, agent scopes, archive and hard delete behave the same wherever the state
lives. Two PostgreSQL stores over one database stand for two replicas.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.memory.conftest import SwitchableEmbedder
from thalos_bot.memory.assembly import MemoryParts, build_memory
from thalos_bot.memory.store import MemoryStore
from thalos_bot.service.schema import ALL_MIGRATIONS, PG_ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.pg.database import fetch_one as pg_fetch_one
from thalos_bot.storage.pg.memory_assembly import build_pg_memory
from thalos_bot.storage.pg.memory_store import PgMemoryStore

pytestmark = pytest.mark.anyio


@dataclass
class Engine:
    name: str
    parts: MemoryParts
    url: str | None
    """The PostgreSQL URL (another replica may open it); None on SQLite."""

    @property
    def store(self) -> MemoryStore | PgMemoryStore:
        store = self.parts.store
        assert isinstance(store, MemoryStore | PgMemoryStore)
        return store


@asynccontextmanager
async def opened(name: str, request: pytest.FixtureRequest, folder: Path) -> AsyncIterator[Engine]:
    async with await Database.open(folder / "local.db", migrations=ALL_MIGRATIONS) as local:
        if name == "sqlite":
            yield Engine("sqlite", build_memory(local, embedder=SwitchableEmbedder()), None)
            return
        url = request.getfixturevalue("migrated_url")
        async with await PgDatabase.open(url, migrations=PG_ALL_MIGRATIONS) as pg:
            parts = build_pg_memory(pg, local, embedder=SwitchableEmbedder())
            yield Engine("postgres", parts, url)


@pytest.fixture(params=["sqlite", "postgres"])
async def engine(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Engine]:
    async with opened(request.param, request, tmp_path) as opened_engine:
        yield opened_engine


@pytest.fixture
async def pg_engine(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Engine]:
    async with opened("postgres", request, tmp_path) as opened_engine:
        yield opened_engine


async def test_remember_then_recall_by_words_and_by_meaning(engine: Engine) -> None:
    store = engine.store
    await store.remember("alice", "Alice is allergic to peanuts", tags=["health"])
    await store.remember("alice", "The car is parked on level 3 of the garage")
    by_words = await store.recall(["alice"], "peanuts", ranking="lexical")
    assert [r.record.text for r in by_words] == ["Alice is allergic to peanuts"]
    by_meaning = await store.recall(["alice"], "which nuts must she avoid?", ranking="semantic")
    assert by_meaning[0].record.text == "Alice is allergic to peanuts"
    fused = await store.recall(["alice"], "where did I leave the car")
    assert fused[0].record.text.startswith("The car is parked")


async def test_stemmed_words_match(engine: Engine) -> None:
    await engine.store.remember("alice", "She enjoys running marathons")
    found = await engine.store.recall(["alice"], "marathon run", ranking="lexical")
    assert [r.record.text for r in found] == ["She enjoys running marathons"]


async def test_query_syntax_is_plain_words(engine: Engine) -> None:
    await engine.store.remember("alice", "Meeting notes: budget & hiring")
    for query in ["budget & | ! (", "'; DROP TABLE memories; --", "hiring:*", "!!"]:
        await engine.store.recall(["alice"], query, ranking="lexical")
    found = await engine.store.recall(["alice"], "budget & | ! (", ranking="lexical")
    assert [r.record.text for r in found] == ["Meeting notes: budget & hiring"]


async def test_a_restatement_refreshes_the_record(engine: Engine) -> None:
    first = await engine.store.remember("alice", "Alice's daughter is called Maya")
    again = await engine.store.remember("alice", "Alice's daughter is called Maya.")
    assert again.deduped
    assert again.record.id == first.record.id
    assert await engine.store.count("alice") == 1


async def test_owners_never_see_each_other(engine: Engine) -> None:
    await engine.store.remember("alice", "The wifi password is on the fridge")
    assert await engine.store.recall(["bob"], "wifi password") == []
    assert await engine.store.list("bob") == []
    assert len(await engine.store.recall(["alice"], "wifi password")) == 1


async def test_agent_scopes(engine: Engine) -> None:
    await engine.store.remember("alice", "Shared: Alice lives in Lyon")
    await engine.store.remember("alice", "Coder only: the repo uses ruff", agent="coder")
    seen_by_writer = await engine.store.recall(["alice"], "Lyon ruff repo", agent="writer")
    assert [r.record.text for r in seen_by_writer] == ["Shared: Alice lives in Lyon"]
    seen_by_coder = await engine.store.recall(["alice"], "Lyon ruff repo", agent="coder")
    assert len(seen_by_coder) == 2
    assert await engine.store.count("alice", seen_by="writer") == 1


async def test_archive_hides_and_delete_removes(engine: Engine) -> None:
    kept = await engine.store.remember("alice", "Dentist appointment on Friday")
    gone = await engine.store.remember("alice", "Old locker code is 4312")
    assert await engine.store.archive("bob", kept.record.id) is None  # not bob's
    assert await engine.store.archive("alice", kept.record.id) is not None
    assert await engine.store.recall(["alice"], "dentist Friday") == []
    assert await engine.store.count("alice", include_archived=True) == 2
    assert await engine.store.delete(gone.record.id, owner="alice")
    assert await engine.store.get(gone.record.id) is None
    assert await engine.store.recall(["alice"], "locker code", ranking="semantic") == []


async def test_an_embedder_outage_leaves_records_pending_then_reindexed(engine: Engine) -> None:
    embedder = engine.parts.embedder
    assert isinstance(embedder, SwitchableEmbedder)
    embedder.failing = True
    stored = await engine.store.remember("alice", "The spare key is under the blue pot")
    assert stored.index_pending
    assert await engine.parts.reindexer.pending_count() == 1
    embedder.failing = False
    report = await engine.parts.reindexer.reindex()
    assert (report.embedded, report.pending) == (1, 0)
    found = await engine.store.recall(["alice"], "where is the spare key", ranking="semantic")
    assert found[0].record.id == stored.record.id


async def test_a_second_replica_finds_what_the_first_wrote(
    pg_engine: Engine, tmp_path: Path
) -> None:
    engine = pg_engine
    assert engine.url is not None
    async with (
        await PgDatabase.open(engine.url, migrations=PG_ALL_MIGRATIONS) as other_pg,
        await Database.open(tmp_path / "other.db", migrations=ALL_MIGRATIONS) as other_local,
    ):
        other = build_pg_memory(other_pg, other_local, embedder=SwitchableEmbedder()).store
        assert isinstance(other, PgMemoryStore)
        await engine.store.remember("alice", "Bob's birthday is on 12 May")
        # The other replica loads its mirror now, then the first writes again: it must
        # notice and reload rather than search a stale copy.
        first = await other.recall(["alice"], "when is Bob's birthday", ranking="semantic")
        assert [r.record.text for r in first] == ["Bob's birthday is on 12 May"]
        await engine.store.remember("alice", "The plumber comes on Tuesday morning")
        later = await other.recall(["alice"], "plumber visit day", ranking="semantic")
        assert later[0].record.text == "The plumber comes on Tuesday morning"
        deleted = await other.list("alice")
        assert await other.delete(deleted[0].id)
        again = await engine.store.recall(["alice"], "plumber visit day", ranking="semantic")
        assert all(r.record.id != deleted[0].id for r in again)


async def test_words_are_indexed_by_a_generated_column(pg_engine: Engine) -> None:
    store = pg_engine.store
    assert isinstance(store, PgMemoryStore)
    await store.remember("alice", "Quarterly report due", tags=["work"])
    async with store.database.read() as conn:
        row = await pg_fetch_one(
            conn,
            "SELECT words::text AS words, (SELECT indexdef FROM pg_indexes"
            " WHERE indexname = 'memories_words') AS gin FROM memories",
        )
    assert row is not None
    assert "'quarter'" in row["words"]
    assert "'work'" in row["words"]
    assert "USING gin" in row["gin"]
