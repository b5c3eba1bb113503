"""The catalog over in-process sources: globs, policies, budgets, limits, failures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from tests.tools.conftest import agent, context, tool_call
from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.tools.catalog import SourceCatalog, truncate
from thalos_bot.tools.policy import PolicySet, ToolPolicy
from thalos_bot.tools.source import SourceStatus, SourceTool, ToolSource
from thalos_bot.tools.types import ToolCatalog, ToolContext, ToolResult


class FakeSource:
    """A source whose tools echo their arguments; ``gate`` holds calls until set."""

    def __init__(self, name: str, tools: Sequence[str], *, fail: bool = False) -> None:
        self._name = name
        self._tools = tuple(SourceTool(t, f"The {t} tool.") for t in tools)
        self.calls: list[tuple[str, dict[str, Any], str]] = []
        self.gate: anyio.Event | None = None
        self.active = 0
        self.peak = 0
        self.fail = fail

    @property
    def name(self) -> str:
        return self._name

    def tools(self) -> Sequence[SourceTool]:
        return self._tools

    def status(self) -> SourceStatus:
        return SourceStatus("ready", len(self._tools))

    async def call(
        self, tool: str, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolResult:
        self.calls.append((tool, dict(arguments), context.caller.id))
        if self.fail:
            raise RuntimeError("boom")
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            if self.gate is not None:
                await self.gate.wait()
        finally:
            self.active -= 1
        return ToolResult(str(arguments.get("text", "")))


def test_the_catalog_and_sources_meet_their_protocols() -> None:
    source: ToolSource = FakeSource("a", ["b"])
    catalog: ToolCatalog = SourceCatalog([source])
    assert [spec.name for spec in catalog.specs_for(agent())] == ["a__b"]


def test_specs_follow_source_order_and_agent_globs() -> None:
    catalog = SourceCatalog([FakeSource("fs", ["read", "write"]), FakeSource("web", ["get"])])
    assert [s.name for s in catalog.specs_for(agent())] == ["fs__read", "fs__write", "web__get"]
    assert [s.name for s in catalog.specs_for(agent("fs__*"))] == ["fs__read", "fs__write"]
    assert [s.name for s in catalog.specs_for(agent("*__read", "web__get"))] == [
        "fs__read",
        "web__get",
    ]
    assert catalog.specs_for(agent("nothing")) == []
    spec = catalog.specs_for(agent("fs__read"))[0]
    assert spec.description == "The read tool."


def test_two_sources_may_not_share_a_name() -> None:
    with pytest.raises(ValueError, match="named 'fs'"):
        SourceCatalog([FakeSource("fs", ["a"]), FakeSource("fs", ["b"])])


@pytest.mark.anyio
async def test_hidden_and_unknown_tools_look_the_same() -> None:
    source = FakeSource("fs", ["read", "write"])
    catalog = SourceCatalog([source])
    reader = agent("fs__read")
    hidden = await catalog.call(tool_call("fs__write", text="x"), context(who=reader))
    unknown = await catalog.call(tool_call("fs__delete", text="x"), context(who=reader))
    assert hidden == ToolResult("There is no tool named 'fs__write'.", "error")
    assert unknown == ToolResult("There is no tool named 'fs__delete'.", "error")
    assert source.calls == []


@pytest.mark.anyio
async def test_policies_are_checked_against_the_caller_roles_only() -> None:
    source = FakeSource("fs", ["read", "write_file", "write_dir"])
    policies = PolicySet(
        [
            ToolPolicy("fs__write_*", frozenset({"developer"})),
            ToolPolicy("fs__write_dir", frozenset({"admin"})),
        ]
    )
    catalog = SourceCatalog([source], policies)
    guest = context("guest")
    developer = context("developer")
    both = context("developer", "admin")

    refused = await catalog.call(tool_call("fs__write_file", roles=["developer"]), guest)
    assert refused.outcome == "refused"
    assert "not permitted for this caller" in refused.content
    assert (await catalog.call(tool_call("fs__read"), guest)).outcome == "ok"
    assert (await catalog.call(tool_call("fs__write_file"), developer)).outcome == "ok"
    assert (await catalog.call(tool_call("fs__write_dir"), developer)).outcome == "refused"
    assert (await catalog.call(tool_call("fs__write_dir"), both)).outcome == "ok"
    assert [name for name, _, _ in source.calls] == ["read", "write_file", "write_dir"]

    roles = {e.qualified: e.required_roles for e in catalog.entries()}
    assert roles == {
        "fs__read": frozenset(),
        "fs__write_file": frozenset({"developer"}),
        "fs__write_dir": frozenset({"developer", "admin"}),
    }


@pytest.mark.anyio
async def test_policies_and_globs_also_match_the_unsanitised_name() -> None:
    source = FakeSource("fs", ["write.file"])
    catalog = SourceCatalog([source], PolicySet([ToolPolicy("fs__write.*", frozenset({"dev"}))]))
    [spec] = catalog.specs_for(agent("fs__write.file"))
    assert spec.name == "fs__write_file"
    refused = await catalog.call(tool_call("fs__write_file"), context())
    assert refused.outcome == "refused"
    assert (await catalog.call(tool_call("fs__write_file"), context("dev"))).outcome == "ok"
    assert source.calls == [("write.file", {}, "alice")]


def test_renames_are_logged_once() -> None:
    catalog = SourceCatalog([FakeSource("fs", ["read.file"])])
    with capture_logs() as logs:
        catalog.specs_for(agent())
        catalog.specs_for(agent())
    renamed = [e for e in logs if e["event"] == "tool-renamed"]
    assert len(renamed) == 1
    assert renamed[0]["tool"] == "fs__read.file"
    assert renamed[0]["exposed_as"] == "fs__read_file"


@pytest.mark.anyio
async def test_results_over_budget_are_truncated_with_a_marker() -> None:
    catalog = SourceCatalog([FakeSource("t", ["echo"])], max_result_chars=300)
    result = await catalog.call(tool_call("t__echo", text="é" * 1000), context())
    assert result.content == "é" * 300 + "\n[truncated: 700 of 1000 characters cut]"
    assert truncate("short", 300) == "short"


@pytest.mark.anyio
async def test_a_source_that_raises_gives_an_error_result() -> None:
    catalog = SourceCatalog([FakeSource("t", ["boom"], fail=True)])
    with capture_logs() as logs:
        result = await catalog.call(tool_call("t__boom"), context())
    assert result == ToolResult("The tool 't__boom' failed unexpectedly.", "error")
    assert [e["event"] for e in logs] == ["tool-source-error"]


@pytest.mark.anyio
async def test_parallel_calls_of_one_session_are_limited() -> None:
    source = FakeSource("t", ["wait"])
    source.gate = anyio.Event()
    catalog = SourceCatalog([source], max_parallel_calls=2)
    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(catalog.call, tool_call("t__wait"), context())
        await anyio.wait_all_tasks_blocked()
        assert source.active == 2
        source.gate.set()
    assert source.peak == 2
    assert len(source.calls) == 5


class PickySource(FakeSource):
    def offers_to(self, agent: AgentDefinition) -> bool:
        return agent.id == "assistant"


@pytest.mark.anyio
async def test_a_source_may_hide_its_tools_from_some_agents() -> None:
    source = PickySource("picky", ["tool"])
    catalog = SourceCatalog([source, FakeSource("open", ["tool"])])
    other = agent(agent_id="other")
    assert [s.name for s in catalog.specs_for(agent())] == ["picky__tool", "open__tool"]
    assert [s.name for s in catalog.specs_for(other)] == ["open__tool"]
    hidden = await catalog.call(tool_call("picky__tool"), context(who=other))
    assert hidden.content == "There is no tool named 'picky__tool'."
    assert source.calls == []
