"""Nobody to ask means no: an "ask" tool call in a detached run (a subagent, as every
scheduled run and delegated step is) is refused, never passed through."""

from __future__ import annotations

import pytest

from tests.subagents.conftest import ALICE, CATALOG, CountingStore
from tests.tools.test_gate import ASK_WRITES, catalog
from thalos_bot.providers.scripted import CallTool, Say, ScriptedProvider
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.subagents.outcome import RunResult
from thalos_bot.subagents.runner import SubagentRunner

pytestmark = pytest.mark.anyio


async def test_an_ask_in_a_detached_run_is_refused_and_the_tool_never_runs() -> None:
    tools, fs, audit = catalog(ASK_WRITES)
    provider = ScriptedProvider(default=None)
    provider.push([CallTool("fs__write_file", {"path": "/tmp/x"})], [Say("Could not write.")])
    async with Runtime(
        catalog=CATALOG,
        store=CountingStore(),
        provider=provider,
        settings=RuntimeSettings(model="m"),
        tools=tools,
    ) as runtime:
        outcome = await SubagentRunner(runtime).run("researcher", "write it", ALICE)
    assert isinstance(outcome, RunResult)
    assert [c.outcome for c in outcome.tool_calls] == ["refused"]
    assert fs.calls == [], "the tool never ran"
    assert [(e.decision, e.decided_by) for e in audit.entries] == [("denied", "no approver")]
    second = provider.requests[1].messages[-1]
    assert "approv" in second.content[0].content.lower()  # type: ignore[union-attr]
