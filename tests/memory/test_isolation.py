"""Owners never see each other's memories, by any path: recall, list, forget, the
auto-recall block, export by owner. The shared owner is the one deliberate exception,
and only for reading."""

from __future__ import annotations

import pytest

from tests.memory.conftest import ALICE, BOB, SID, Clock, agent, context
from thalos_bot.config.memory import MemorySettings
from thalos_bot.domain.security import SecurityContext
from thalos_bot.memory.recall import MemoryRecall
from thalos_bot.memory.store import MemoryStore
from thalos_bot.memory.tools import MemoryToolSource

pytestmark = pytest.mark.anyio

ALICE_SECRET = "Alice's locker code at the climbing gym is 4417"
BOB_SECRET = "Bob's locker code at the climbing gym is 9902"
QUERY = "what is the locker code at the climbing gym?"


@pytest.fixture
async def ids(store: MemoryStore) -> dict[str, str]:
    alice = await store.remember("alice", ALICE_SECRET, kind="fact")
    bob = await store.remember("bob", BOB_SECRET, kind="fact")
    return {"alice": alice.record.id, "bob": bob.record.id}


async def test_store_recall_list_and_get_are_per_owner(
    store: MemoryStore, ids: dict[str, str]
) -> None:
    assert [r.record.id for r in await store.recall(["alice"], QUERY)] == [ids["alice"]]
    assert [r.id for r in await store.list("alice", include_archived=True)] == [ids["alice"]]
    assert await store.get(ids["bob"], owner="alice") is None
    assert await store.archive("alice", ids["bob"]) is None
    assert not (await store.get(ids["bob"])).archived  # type: ignore[union-attr]


async def test_identical_text_is_never_deduped_across_owners(store: MemoryStore) -> None:
    a = await store.remember("alice", "Prefers aisle seats")
    b = await store.remember("bob", "Prefers aisle seats")
    assert a.record.id != b.record.id
    assert not b.deduped


async def test_tools_recall_and_list_only_the_callers_records(
    store: MemoryStore, clock: Clock, ids: dict[str, str]
) -> None:
    source = MemoryToolSource(store, clock=clock)
    recalled = await source.call("recall", {"query": QUERY}, context(ALICE))
    assert ids["alice"] in recalled.content
    assert ids["bob"] not in recalled.content
    assert "9902" not in recalled.content
    listed = await source.call("list", {}, context(ALICE))
    assert ids["alice"] in listed.content
    assert ids["bob"] not in listed.content


async def test_forgetting_another_owners_id_looks_like_a_missing_id(
    store: MemoryStore, clock: Clock, ids: dict[str, str]
) -> None:
    source = MemoryToolSource(store, clock=clock)
    theirs = await source.call("forget", {"id": ids["bob"]}, context(ALICE))
    missing = await source.call("forget", {"id": "m-000000000000"}, context(ALICE))
    assert theirs.outcome == missing.outcome == "error"
    assert theirs.content == missing.content.replace("m-000000000000", ids["bob"])
    assert theirs.events == missing.events == ()
    assert not (await store.get(ids["bob"])).archived  # type: ignore[union-attr]


async def test_a_tool_argument_cannot_choose_the_owner(
    store: MemoryStore, clock: Clock, ids: dict[str, str]
) -> None:
    source = MemoryToolSource(store, clock=clock)
    forged = await source.call("remember", {"text": "x", "owner": "bob"}, context(ALICE))
    assert forged.outcome == "error"
    assert await store.count("bob") == 1


async def test_the_auto_recall_block_holds_only_the_callers_memories(
    store: MemoryStore, ids: dict[str, str]
) -> None:
    recall = MemoryRecall(store)
    mine = await recall.contribute(agent(), ALICE, SID, QUERY)
    theirs = await recall.contribute(agent(), BOB, SID, QUERY)
    assert "4417" in mine.parts[0].text
    assert "9902" not in mine.parts[0].text
    assert mine.events[0].data["ids"] == [ids["alice"]]
    assert "9902" in theirs.parts[0].text
    assert "4417" not in theirs.parts[0].text
    carol = await recall.contribute(agent(), SecurityContext.of("carol"), SID, QUERY)
    assert not carol.parts


async def test_everyone_recalls_the_shared_owner_but_nobody_else(
    store: MemoryStore, clock: Clock, ids: dict[str, str]
) -> None:
    shared = await store.remember("project", "The climbing gym closes at 22:00", kind="fact")
    recall = MemoryRecall(store, shared_owner="project")
    block = (await recall.contribute(agent(), ALICE, SID, QUERY)).parts[0].text
    assert shared.record.id in block
    assert "9902" not in block
    source = MemoryToolSource(store, MemorySettings(shared_owner="project"), clock=clock)
    found = await source.call("recall", {"query": QUERY}, context(BOB))
    assert shared.record.id in found.content
    assert ids["alice"] not in found.content
