"""The FTS5 query keeps its rarest terms within a row budget, so one common word in a
message does not make recall rank a large share of a big store."""

from __future__ import annotations

import pytest

from thalos_bot.memory import index
from thalos_bot.memory.index import Fts5Index, Scope
from thalos_bot.memory.records import new_memory
from thalos_bot.memory.store import MemoryStore

pytestmark = pytest.mark.anyio


async def test_common_terms_are_dropped_past_the_budget(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index, "MATCH_BUDGET", 5)
    await store.insert_many(
        new_memory("alice", f"Walks the dog every morning, route {n}") for n in range(12)
    )
    tea = await store.remember("alice", "Drinks jasmine tea")
    fts = Fts5Index()
    async with store.database.read() as conn:
        kept, since, _ = await fts._affordable(conn, ["morning", "jasmine", "every"])
        hits = await fts.search(conn, "jasmine every morning", Scope(("alice",)), 10)
    assert (kept, since) == (["jasmine"], 0)
    async with store.database.read() as conn:
        absent, since, _ = await fts._affordable(conn, ["morning", "every", "nowhere"])
    assert absent == ["nowhere", "morning"]  # the rarest present term always stays
    assert since > 1  # ... but only its newest rows are ranked
    newest = await store.recall(["alice"], "every morning", top_k=20, touch=False)
    assert 0 < len(newest) < 12
    assert any("route 11" in r.record.text for r in newest)  # the newest
    assert len(hits) == 1
    found = await store.recall(["alice"], "jasmine every morning", touch=False)
    assert [r.record.id for r in found] == [tea.record.id]


async def test_a_small_store_keeps_every_term(store: MemoryStore) -> None:
    await store.insert_many(
        new_memory("alice", f"Walks the dog every morning, route {n}") for n in range(12)
    )
    async with store.database.read() as conn:
        kept, since, _ = await Fts5Index()._affordable(conn, ["morning", "jasmine", "every"])
    assert (sorted(kept), since) == (["every", "jasmine", "morning"], 0)
