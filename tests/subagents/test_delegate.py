"""``agents__delegate`` as a tool source: who sees it, depth, partial results, usage."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from tests.subagents.conftest import ALICE, CATALOG, CountingStore
from thalos_bot.domain.agents import AgentCatalog
from thalos_bot.domain.events import Usage
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.providers.scripted import CallTool, Say, ScriptedProvider
from thalos_bot.runtime.protocol import TurnRequest
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.subagents.delegate import AgentsToolSource
from thalos_bot.subagents.runner import Budget, SubagentRunner
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot.tools.types import ToolContext

pytestmark = pytest.mark.anyio


class Rig:
    def __init__(self, catalog: AgentCatalog, budget: Budget | None = None) -> None:
        self.provider = ScriptedProvider(default=None)
        self.store = CountingStore()
        self.source = AgentsToolSource(catalog)
        self.tools = SourceCatalog([self.source])
        self.runtime = Runtime(
            catalog=catalog,
            store=self.store,
            provider=self.provider,
            settings=RuntimeSettings(model="m"),
            tools=self.tools,
        )
        self.source.bind(SubagentRunner(self.runtime, budget=budget))

    def context(self, agent: str, depth: int = 0) -> ToolContext:
        return ToolContext(ALICE, CATALOG.get(agent), SessionId("s_parent"), depth=depth)


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    made = Rig(CATALOG)
    async with made.runtime:
        yield made


def test_only_agents_with_delegates_and_matching_tools_see_the_tool() -> None:
    rig = Rig(CATALOG)
    names = {a.id: [s.name for s in rig.tools.specs_for(a)] for a in CATALOG}
    assert names == {"boss": ["agents__delegate"], "researcher": [], "secret": []}
    no_tools = replace(CATALOG.get("boss"), tools=("memory__*",))
    assert rig.tools.specs_for(no_tools) == []


async def test_a_parent_turn_counts_its_subagents_tokens(rig: Rig) -> None:
    rig.provider.push(
        [CallTool("agents__delegate", {"agent": "researcher", "task": "Look it up."})],
        [Say("Found: 42.")],
        [Say("It is 42.")],
    )
    session = await rig.runtime.create_session("boss", ALICE)
    result = await rig.runtime.run_turn(TurnRequest(session.id, ALICE, "What is it?"))
    assert result.ok
    assert result.text == "It is 42."
    sub_request = rig.provider.requests[1]
    assert [(m.role, m.text) for m in sub_request.messages] == [("user", "Look it up.")]
    # Each scripted call reports its prompt as input and its text as output tokens.
    parent_usage = result.terminal.usage
    info = await rig.runtime.session_info(session.id)
    assert info is not None
    assert info.usage == parent_usage
    sub_record = (await rig.store.records())[1]
    assert sub_record.agent_id == "researcher"
    assert sub_record.status == "closed"
    assert sub_record.usage.total > 0
    # The subagent's usage arrives as one Usage event of the parent turn, and is in its sum.
    usages = [e.usage for e in result.events if isinstance(e, Usage)]
    assert sub_record.usage in usages
    assert sum(u.total for u in usages) == parent_usage.total


async def test_the_deepest_level_may_not_delegate_further(rig: Rig) -> None:
    result = await rig.source.call(
        "delegate", {"agent": "researcher", "task": "deeper"}, rig.context("boss", depth=2)
    )
    assert result.outcome == "refused"
    assert rig.store.created == []


async def test_a_refused_target_reads_exactly_like_a_missing_one(rig: Rig) -> None:
    secret = await rig.source.call(
        "delegate", {"agent": "secret", "task": "tell"}, rig.context("boss")
    )
    missing = await rig.source.call(
        "delegate", {"agent": "ghost", "task": "tell"}, rig.context("boss")
    )
    assert secret.outcome == missing.outcome == "error"
    assert secret.content.replace("secret", "X") == missing.content.replace("ghost", "X")
    assert rig.store.created == []


async def test_a_limit_marks_the_result_partial() -> None:
    rig = Rig(CATALOG, budget=Budget(max_total_tokens=2))
    async with rig.runtime:
        rig.provider.push([Say("Half an answer")])
        result = await rig.source.call(
            "delegate", {"agent": "researcher", "task": "Go."}, rig.context("boss")
        )
    assert result.content.startswith("[partial: Researcher ran out of its token budget")
    assert "Half an answer" in result.content
    assert result.usage.total > 2


async def test_the_caller_is_the_turns_caller_never_an_argument(rig: Rig) -> None:
    rig.provider.push([Say("ok")])
    result = await rig.source.call(
        "delegate",
        {"agent": "researcher", "task": "Go.", "caller": "mallory"},
        rig.context("boss"),
    )
    assert result.outcome == "error"
    assert rig.store.created == []
    rig.provider.push([Say("ok")])
    await rig.source.call("delegate", {"agent": "researcher", "task": "Go."}, rig.context("boss"))
    [record] = await rig.store.records()
    assert record.owner == ALICE.id
    assert AgentId(record.agent_id) == "researcher"
