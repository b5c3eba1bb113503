"""``[memory] scope`` governs every path alike: remember, recall, list, forget and the
auto-recall block. Under ``scope = "agent"`` one agent cannot reach, by any tool, what
another agent remembered for the same person; under ``scope = "owner"`` all of that
person's agents share it. The shared owner is read by every agent, written by none."""

from __future__ import annotations

from typing import Literal

import pytest

from tests.memory.conftest import ALICE, SID, Clock, agent, context
from thalos_bot.config.memory import MemorySettings
from thalos_bot.memory.recall import MemoryRecall
from thalos_bot.memory.store import MemoryStore
from thalos_bot.memory.tools import MemoryToolSource
from thalos_bot.tools.types import ToolContext

pytestmark = pytest.mark.anyio

CODER, HELPER = agent("coder"), agent("helper")
TEXT = "The staging database password rotates every Friday"
QUERY = "when does the staging database password rotate?"
Scope = Literal["owner", "agent"]


def source(
    store: MemoryStore, clock: Clock, scope: Scope, shared: str | None = None
) -> MemoryToolSource:
    return MemoryToolSource(store, MemorySettings(scope=scope, shared_owner=shared), clock=clock)


async def coder_remembers(tools: MemoryToolSource) -> str:
    result = await tools.call("remember", {"text": TEXT, "kind": "fact"}, context(who=CODER))
    assert result.outcome == "ok"
    record_id = result.content.split()[1]
    assert record_id.startswith("m-")
    return record_id


def helper() -> ToolContext:
    return context(ALICE, HELPER)


def missing(record_id: str) -> str:
    return f"There is no memory with the id {record_id!r}."


# --- remember -------------------------------------------------------------------------


@pytest.mark.parametrize(("scope", "filed_under"), [("owner", None), ("agent", "coder")])
async def test_remember_files_the_memory_where_the_scope_says(
    store: MemoryStore, clock: Clock, scope: Scope, filed_under: str | None
) -> None:
    record_id = await coder_remembers(source(store, clock, scope))
    record = await store.get(record_id)
    assert record is not None
    assert record.owner == "alice"
    assert record.agent == filed_under


@pytest.mark.parametrize(("scope", "copies"), [("owner", 1), ("agent", 2)])
async def test_remember_dedupes_only_within_what_the_agent_sees(
    store: MemoryStore, clock: Clock, scope: Scope, copies: int
) -> None:
    tools = source(store, clock, scope)
    await coder_remembers(tools)
    again = await tools.call("remember", {"text": TEXT}, helper())
    assert again.content.startswith("Already remembered" if copies == 1 else "Remembered")
    assert await store.count("alice") == copies


# --- recall ---------------------------------------------------------------------------


@pytest.mark.parametrize(("scope", "helper_sees"), [("owner", True), ("agent", False)])
async def test_recall_follows_the_scope(
    store: MemoryStore, clock: Clock, scope: Scope, helper_sees: bool
) -> None:
    tools = source(store, clock, scope)
    record_id = await coder_remembers(tools)
    mine = await tools.call("recall", {"query": QUERY}, context(who=CODER))
    theirs = await tools.call("recall", {"query": QUERY}, helper())
    assert record_id in mine.content
    assert (record_id in theirs.content) is helper_sees
    if not helper_sees:
        assert theirs.content == "No memories match that query."
        assert "Friday" not in theirs.content


@pytest.mark.parametrize(("scope", "helper_sees"), [("owner", True), ("agent", False)])
async def test_auto_recall_follows_the_scope(
    store: MemoryStore, clock: Clock, scope: Scope, helper_sees: bool
) -> None:
    await coder_remembers(source(store, clock, scope))
    recall = MemoryRecall(store, clock=clock)
    mine = await recall.contribute(CODER, ALICE, SID, QUERY)
    theirs = await recall.contribute(HELPER, ALICE, SID, QUERY)
    assert any("Friday" in part.text for part in mine.parts)
    assert any("Friday" in part.text for part in theirs.parts) is helper_sees


# --- list -----------------------------------------------------------------------------


@pytest.mark.parametrize(("scope", "helper_sees"), [("owner", True), ("agent", False)])
async def test_list_follows_the_scope(
    store: MemoryStore, clock: Clock, scope: Scope, helper_sees: bool
) -> None:
    tools = source(store, clock, scope)
    await coder_remembers(tools)
    mine = await tools.call("list", {}, context(who=CODER))
    theirs = await tools.call("list", {}, helper())
    assert "Friday" in mine.content
    assert ("Friday" in theirs.content) is helper_sees
    if not helper_sees:
        assert theirs.content == "No memories stored."
        assert (await tools.call("list", {"kind": "fact"}, helper())).content == (
            "No fact memories stored."
        )


# --- forget ---------------------------------------------------------------------------


@pytest.mark.parametrize(("scope", "helper_may"), [("owner", True), ("agent", False)])
async def test_forget_follows_the_scope(
    store: MemoryStore, clock: Clock, scope: Scope, helper_may: bool
) -> None:
    tools = source(store, clock, scope)
    record_id = await coder_remembers(tools)
    result = await tools.call("forget", {"id": record_id}, helper())
    record = await store.get(record_id)
    assert record is not None
    assert record.archived is helper_may
    if helper_may:
        assert result.content == f"Forgot {record_id}."
    else:
        assert result.outcome == "error"
        assert result.content == missing(record_id), "another agent's id looks missing"
        assert result.events == ()
        again = await tools.call("forget", {"id": record_id}, context(who=CODER))
        assert again.content == f"Forgot {record_id}."


async def test_under_agent_scope_memories_shared_across_agents_stay_reachable(
    store: MemoryStore, clock: Clock
) -> None:
    # Written before the switch to scope = "agent" (or by the operator): no agent.
    shared = await store.remember("alice", TEXT, kind="fact")
    tools = source(store, clock, "agent")
    assert shared.record.id in (await tools.call("recall", {"query": QUERY}, helper())).content
    assert "Friday" in (await tools.call("list", {}, helper())).content
    forgot = await tools.call("forget", {"id": shared.record.id}, helper())
    assert forgot.content == f"Forgot {shared.record.id}."


# --- the shared owner -----------------------------------------------------------------


@pytest.mark.parametrize("scope", ["owner", "agent"])
async def test_the_shared_owner_is_recalled_by_every_agent_and_changed_by_none(
    store: MemoryStore, clock: Clock, scope: Scope
) -> None:
    tools = source(store, clock, scope, shared="project")
    common = await store.remember("project", TEXT, kind="decision")
    coders = await store.remember(
        "project", "Coder reviews use the strict linter set", agent="coder"
    )
    recall = MemoryRecall(store, shared_owner="project", clock=clock)
    for who in (CODER, HELPER):
        seen = await tools.call("recall", {"query": QUERY}, context(ALICE, who))
        assert common.record.id in seen.content
        block = await recall.contribute(who, ALICE, SID, QUERY)
        assert any("Friday" in part.text for part in block.parts)
        forget = await tools.call("forget", {"id": common.record.id}, context(ALICE, who))
        assert forget.content == missing(common.record.id)
        listed = await tools.call("list", {}, context(ALICE, who))
        assert listed.content == "No memories stored.", "list shows the caller's own records"
    linter = "which linter set do coder reviews use?"
    assert (
        coders.record.id
        in (await tools.call("recall", {"query": linter}, context(who=CODER))).content
    )
    helper_view = await tools.call("recall", {"query": linter}, helper())
    assert helper_view.content == "No memories match that query."
    assert not (await store.get(common.record.id)).archived  # type: ignore[union-attr]
