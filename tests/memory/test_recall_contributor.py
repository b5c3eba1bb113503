"""Auto-recall: once per turn, for agents with memory enabled; never fails the turn."""

from __future__ import annotations

import sqlite3

import pytest
from structlog.testing import capture_logs

from tests.memory.conftest import ALICE, NOBODY, SID, Clock, agent
from thalos_bot.domain.agents import MemoryPolicy
from thalos_bot.memory.recall import MemoryRecall
from thalos_bot.memory.render import BLOCK_CLOSE, BLOCK_OPEN
from thalos_bot.memory.store import MemoryStore
from thalos_bot.storage.database import Database

pytestmark = pytest.mark.anyio

SECRET = "Prefers the window seat on long flights"


async def test_recalled_memories_become_a_volatile_block_and_an_event(
    store: MemoryStore, clock: Clock
) -> None:
    stored = await store.remember("alice", SECRET, kind="preference")
    clock.advance(days=3)
    contribution = await MemoryRecall(store, clock=clock).contribute(
        agent(), ALICE, SID, "Book me flights to Tokyo"
    )
    [part] = contribution.parts
    assert not part.cacheable
    assert part.text == "\n".join(
        [BLOCK_OPEN, f"1. [preference · 3 days ago · {stored.record.id}] {SECRET}", BLOCK_CLOSE]
    )
    [event] = contribution.events
    assert event.name == "memory-recalled"
    assert event.session_id == SID
    assert event.data == {"ids": [stored.record.id], "characters": len(part.text.split("\n")[1])}
    record = await store.get(stored.record.id)
    assert record is not None
    assert record.last_recalled_at == clock.now


async def test_nothing_recalled_means_nothing_added(store: MemoryStore) -> None:
    await store.remember("alice", SECRET)
    contribution = await MemoryRecall(store).contribute(agent(), ALICE, SID, "What's 2 + 2?")
    assert (list(contribution.parts), list(contribution.events)) == ([], [])


async def test_disabled_agents_and_anonymous_callers_recall_nothing(store: MemoryStore) -> None:
    await store.remember("alice", SECRET)
    recall = MemoryRecall(store)
    off = agent(memory=MemoryPolicy(enabled=False))
    assert not (await recall.contribute(off, ALICE, SID, "window seat")).parts
    assert not (await recall.contribute(agent(), NOBODY, SID, "window seat")).parts


async def test_the_agent_policy_bounds_the_block(store: MemoryStore) -> None:
    for i in range(10):
        await store.remember("alice", f"Garden fact {i}: tomatoes need sun " + "x" * (10 * i))
    policy = MemoryPolicy(enabled=True, top_k=3, char_budget=5000)
    contribution = await MemoryRecall(store).contribute(
        agent(memory=policy), ALICE, SID, "tomatoes"
    )
    assert len(contribution.parts[0].text.split("\n")) == 3 + 2
    tight = MemoryPolicy(enabled=True, top_k=10, char_budget=200)
    contribution = await MemoryRecall(store).contribute(agent(memory=tight), ALICE, SID, "tomatoes")
    lines = contribution.parts[0].text.split("\n")[1:-1]
    assert sum(len(line) for line in lines) <= 200
    assert contribution.events[0].data["characters"] == sum(len(line) for line in lines)


async def test_min_score_comes_from_the_policy(store: MemoryStore) -> None:
    for i in range(20):
        await store.remember("alice", f"Weather log entry {i}")
    await store.remember("alice", "Favourite dinner is saffron risotto")
    strict = MemoryPolicy(enabled=True, top_k=10, min_score=1.0)
    contribution = await MemoryRecall(store).contribute(
        agent(memory=strict), ALICE, SID, "weather for saffron risotto"
    )
    assert contribution.events[0].data["ids"] == [
        r.record.id for r in await store.recall(["alice"], "saffron risotto")
    ]


async def test_a_failure_becomes_an_event_and_never_raises(
    store: MemoryStore, db: Database
) -> None:
    await store.remember("alice", SECRET)
    async with db.transaction() as conn:
        await conn.execute("DROP TABLE memories_fts_00")
    with capture_logs() as logs:
        contribution = await MemoryRecall(store).contribute(agent(), ALICE, SID, "window seat")
    assert not contribution.parts
    [event] = contribution.events
    assert event.name == "memory-recall-failed"
    assert event.data == {"error": sqlite3.OperationalError.__name__}
    failures = [e for e in logs if e["event"] == "memory-recall-failed"]
    assert failures
    assert failures[0]["log_level"] == "warning"


async def test_a_closed_database_is_a_failure_event_too(store: MemoryStore, db: Database) -> None:
    await db.aclose()
    contribution = await MemoryRecall(store).contribute(agent(), ALICE, SID, "window seat")
    assert [e.name for e in contribution.events] == ["memory-recall-failed"]


async def test_logs_carry_ids_and_counts_never_memory_text(store: MemoryStore) -> None:
    with capture_logs() as logs:
        await store.remember("alice", SECRET, tags=["travel"])
        await MemoryRecall(store).contribute(agent(), ALICE, SID, "window seat please")
        await store.recall(["alice"], "window seat")
    assert logs
    for entry in logs:
        for value in entry.values():
            assert "window" not in str(value).lower(), entry
