"""The ``memory`` tool source, called the way the runtime calls it: through the catalog."""

from __future__ import annotations

import pytest

from tests.memory.conftest import ALICE, BOB, NOBODY, SID, Clock, agent, call, context
from thalos_bot.config.memory import MemorySettings
from thalos_bot.domain.security import SecurityContext
from thalos_bot.memory.store import MemoryStore
from thalos_bot.memory.tools import MemoryToolSource
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot.tools.policy import PolicySet, ToolPolicy
from thalos_bot.tools.types import ToolContext

pytestmark = pytest.mark.anyio

NAMES = ["memory__remember", "memory__recall", "memory__forget", "memory__list"]


def catalog(store: MemoryStore, clock: Clock, **settings: object) -> SourceCatalog:
    source = MemoryToolSource(store, MemorySettings(**settings), clock=clock)  # type: ignore[arg-type]
    return SourceCatalog([source])


async def test_the_tools_are_offered_under_qualified_names_with_schemas(
    store: MemoryStore, clock: Clock
) -> None:
    specs = catalog(store, clock).specs_for(agent())
    assert [s.name for s in specs] == NAMES
    remember = specs[0].input_schema
    assert remember["required"] == ["text"]
    assert "owner" not in remember["properties"]
    assert all(s.input_schema["additionalProperties"] is False for s in specs)


async def test_agent_globs_and_role_policies_apply(store: MemoryStore, clock: Clock) -> None:
    tools = catalog(store, clock)
    reader = agent(tools=("memory__recall", "memory__list"))
    assert [s.name for s in tools.specs_for(reader)] == ["memory__recall", "memory__list"]
    hidden = await tools.call(call("memory__remember", text="x"), context(who=reader))
    assert hidden.outcome == "error"
    assert "no tool" in hidden.content
    policed = SourceCatalog(
        [MemoryToolSource(store, clock=clock)],
        PolicySet([ToolPolicy("memory__remember", frozenset({"writer"}))]),
    )
    refused = await policed.call(call("memory__remember", text="Likes jazz"), context())
    assert refused.outcome == "refused"
    assert await store.count(None) == 0


async def test_the_host_switch_hides_every_tool(store: MemoryStore, clock: Clock) -> None:
    tools = catalog(store, clock, tools=False)
    assert tools.specs_for(agent()) == []
    result = await tools.call(call("memory__recall", query="x"), context())
    assert result.outcome == "error"
    source = MemoryToolSource(store, MemorySettings(tools=False))
    assert source.status().state == "disabled"
    direct = await source.call("recall", {"query": "x"}, context())
    assert direct.outcome == "error"


async def test_remember_then_recall_then_forget(store: MemoryStore, clock: Clock) -> None:
    tools = catalog(store, clock)
    stored = await tools.call(
        call("memory__remember", text="Prefers metric units", kind="preference", importance=4),
        context(),
    )
    assert stored.outcome == "ok"
    [record] = await store.list("alice")
    assert stored.content == f"Remembered {record.id} (preference)."
    assert (record.owner, record.agent, record.importance) == ("alice", None, 4)

    again = await tools.call(call("memory__remember", text="prefers metric units."), context())
    assert again.content == f"Already remembered; refreshed {record.id} (preference)."

    clock.advance(days=2)
    found = await tools.call(call("memory__recall", query="which units?"), context())
    assert found.content == f"1. [preference · 2 days ago · {record.id}] prefers metric units."

    gone = await tools.call(call("memory__forget", id=record.id), context())
    assert gone.content == f"Forgot {record.id}."
    after = await tools.call(call("memory__recall", query="units"), context())
    assert after.content == "No memories match that query."
    archived = await store.get(record.id)
    assert archived is not None
    assert archived.archived, "forget archives; only the operator hard-deletes"


async def test_results_carry_events_for_the_stream(store: MemoryStore, clock: Clock) -> None:
    source = MemoryToolSource(store, clock=clock)
    stored = await source.call("remember", {"text": "Likes jazz", "kind": "preference"}, context())
    [event] = stored.events
    record_id = (await store.list("alice"))[0].id
    assert (event.session_id, event.name) == (SID, "memory-stored")
    assert event.data == {"id": record_id, "kind": "preference", "deduped": False}
    again = await source.call("remember", {"text": "likes jazz"}, context())
    assert again.events[0].data["deduped"] is True
    recalled = await source.call("recall", {"query": "jazz"}, context())
    assert recalled.events[0].name == "memory-recalled"
    assert recalled.events[0].data == {"ids": [record_id], "characters": len("likes jazz")}
    forgotten = await source.call("forget", {"id": record_id}, context())
    assert forgotten.events[0].data == {"id": record_id}


async def test_events_survive_the_catalog(store: MemoryStore, clock: Clock) -> None:
    result = await catalog(store, clock).call(call("memory__remember", text="x y z"), context())
    assert [e.name for e in result.events] == ["memory-stored"]


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "text is required"),
        ({"text": "  "}, "text is required"),
        ({"text": 5}, "text is required"),
        ({"text": "x", "owner": "bob"}, "unknown argument: owner"),
        ({"text": "x", "importance": "high"}, "importance must be a whole number"),
        ({"text": "x", "importance": True}, "importance must be a whole number"),
        ({"text": "x", "importance": 9}, "from 1 to 5"),
        ({"text": "x", "tags": "a,b"}, "tags must be a list"),
        ({"text": "x", "tags": [1]}, "tags must be a list of strings"),
        ({"text": "x", "kind": "Two Words"}, "slug"),
        ({"text": "x" * 4001}, "too long"),
    ],
)
async def test_bad_arguments_are_explained_to_the_model(
    store: MemoryStore, clock: Clock, arguments: dict[str, object], problem: str
) -> None:
    result = await MemoryToolSource(store, clock=clock).call("remember", arguments, context())
    assert result.outcome == "error"
    assert problem in result.content
    assert await store.count(None) == 0


async def test_anonymous_callers_are_refused(store: MemoryStore, clock: Clock) -> None:
    source = MemoryToolSource(store, clock=clock)
    for tool, arguments in [
        ("remember", {"text": "x"}),
        ("recall", {"query": "x"}),
        ("list", {}),
        ("forget", {"id": "m-000000000000"}),
    ]:
        result = await source.call(tool, arguments, context(NOBODY))
        assert result.outcome == "refused"
    assert await store.count(None) == 0


async def test_list_pages_and_filters(store: MemoryStore, clock: Clock) -> None:
    source = MemoryToolSource(store, MemorySettings(page_size=2), clock=clock)
    assert (await source.call("list", {}, context())).content == "No memories stored."
    for i in range(5):
        clock.advance(minutes=1)
        await store.remember("alice", f"Item {i} qz{i}", kind="fact" if i < 3 else "note")
    first = await source.call("list", {}, context())
    lines = first.content.split("\n")
    assert lines[0] == "Memories 1-2 of 5 (page 1 of 3):"
    assert lines[1].endswith("Item 4 qz4")
    last = await source.call("list", {"page": 3}, context())
    assert last.content.split("\n")[0] == "Memories 5-5 of 5 (page 3 of 3):"
    beyond = await source.call("list", {"page": 4}, context())
    assert beyond.content == "There are only 3 page(s) of memories."
    facts = await source.call("list", {"kind": "fact", "page": 2}, context())
    assert facts.content.split("\n")[0] == "Fact memories 3-3 of 3 (page 2 of 2):"


async def test_scope_agent_keeps_tool_memories_with_their_agent(
    store: MemoryStore, clock: Clock
) -> None:
    source = MemoryToolSource(store, MemorySettings(scope="agent"), clock=clock)
    coder, writer = agent("coder"), agent("writer")
    await source.call("remember", {"text": "Tabs, not spaces"}, context(who=coder))
    [record] = await store.list("alice")
    assert record.agent == "coder"
    mine = await source.call("recall", {"query": "tabs"}, context(who=coder))
    theirs = await source.call("recall", {"query": "tabs"}, context(who=writer))
    assert "Tabs" in mine.content
    assert theirs.content == "No memories match that query."


async def test_recall_is_capped_by_the_host(store: MemoryStore, clock: Clock) -> None:
    source = MemoryToolSource(store, MemorySettings(max_recall=2), clock=clock)
    for i in range(5):
        await store.remember("alice", f"Tomato variety {i} zz{i}")
    result = await source.call("recall", {"query": "tomato", "top_k": 50}, context())
    assert len(result.content.split("\n")) == 2


async def test_the_shared_owner_is_read_only_through_tools(
    store: MemoryStore, clock: Clock
) -> None:
    settings = MemorySettings(shared_owner="project")
    source = MemoryToolSource(store, settings, clock=clock)
    shared = await store.remember("project", "Deploys happen on Tuesdays", kind="decision")
    seen = await source.call("recall", {"query": "when are deploys"}, context(BOB))
    assert f"[decision · project · just now · {shared.record.id}]" in seen.content
    forget = await source.call("forget", {"id": shared.record.id}, context(BOB))
    assert forget.outcome == "error"
    assert forget.content == f"There is no memory with the id {shared.record.id!r}."
    project = ToolContext(SecurityContext.of("project"), agent(), SID)
    write = await source.call("remember", {"text": "New rule"}, project)
    assert write.outcome == "refused"
    forget = await source.call("forget", {"id": shared.record.id}, project)
    assert forget.outcome == "error"
    assert not (await store.get(shared.record.id)).archived  # type: ignore[union-attr]
    assert await store.count("project") == 1
    listed = await source.call("list", {}, context(ALICE))
    assert listed.content == "No memories stored.", "list shows the caller's own records"


async def test_people_write_the_shared_scope_only_when_it_is_opened(
    store: MemoryStore, clock: Clock
) -> None:
    closed = MemoryToolSource(store, MemorySettings(shared_owner="home"), clock=clock)
    refused = await closed.call(
        "remember", {"text": "Bins on Thursday", "shared": True}, context(ALICE)
    )
    assert refused.outcome == "refused"
    assert "shared_writes = true" in refused.content
    assert (await closed.call("list", {"shared": True}, context(ALICE))).outcome == "refused"
    assert await store.count("home") == 0
    source = MemoryToolSource(
        store, MemorySettings(shared_owner="home", shared_writes=True), clock=clock
    )
    filed = await source.call(
        "remember", {"text": "Bins on Thursday", "shared": True}, context(ALICE)
    )
    assert filed.content.startswith("Remembered for everyone ")
    assert await store.count("home") == 1
    assert await store.count(ALICE.id) == 0
    seen = await source.call("recall", {"query": "when are the bins"}, context(BOB))
    assert "Bins on Thursday" in seen.content
    listed = await source.call("list", {"shared": True}, context(BOB))
    assert "Bins on Thursday" in listed.content
    assert (await source.call("list", {}, context(BOB))).content == "No memories stored."
    record_id = filed.content.split()[3]
    forgot = await source.call("forget", {"id": record_id}, context(BOB))
    assert forgot.content == f"Forgot {record_id}."
    assert await store.count("home") == 0
    bad = await source.call("remember", {"text": "x", "shared": "yes"}, context(ALICE))
    assert bad.outcome == "error"
    assert "shared must be true or false" in bad.content


def test_shared_writes_need_a_shared_owner() -> None:
    with pytest.raises(ValueError, match="shared_writes = true needs shared_owner"):
        MemorySettings(shared_writes=True)
