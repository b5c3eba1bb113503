"""A turn with nobody to ask (a scheduled or delegated run builds its TurnRequest without
an approver): an "ask" tool call is refused, never passed through; an approver bound to
the request reaches the gate."""

from __future__ import annotations

import pytest

from tests.telegram.harness import CATALOG
from tests.tools.test_gate import FsSource, ListAudit, ScriptedApprover
from thalos_bot.domain.messages import ToolResultBlock
from thalos_bot.domain.security import SecurityContext
from thalos_bot.providers.scripted import CallTool, Say, ScriptedProvider
from thalos_bot.runtime.protocol import TurnRequest
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot.tools.gate import PermissionGate
from thalos_bot.tools.policy import PolicySet, ToolPolicy

pytestmark = pytest.mark.anyio
OWNER = SecurityContext.of("owner", ())


async def run(approver: ScriptedApprover | None) -> tuple[str, FsSource, ListAudit]:
    source, audit = FsSource(), ListAudit()
    policies = PolicySet([ToolPolicy("fs__write_*", action="ask")])
    tools = SourceCatalog([source], policies, gate=PermissionGate(policies, audit=audit))
    provider = ScriptedProvider([[CallTool("fs__write_file", {"path": "a"})], [Say("Done.")]])
    async with Runtime(
        catalog=CATALOG,
        store=MemorySessionStore(),
        provider=provider,
        settings=RuntimeSettings(model="m"),
        tools=tools,
    ) as runtime:
        session = await runtime.create_session("helper", OWNER)
        result = await runtime.run_turn(
            TurnRequest(session.id, OWNER, "nightly report", approver=approver)
        )
    assert result.ok
    last = provider.requests[1].messages[-1]
    [block] = [b for b in last.content if isinstance(b, ToolResultBlock)]
    return block.content, source, audit


async def test_a_detached_run_is_refused_an_ask() -> None:
    content, source, audit = await run(None)
    assert "nobody to ask" in content
    assert source.calls == []
    assert [(e.decision, e.decided_by) for e in audit.entries] == [("denied", "no approver")]


async def test_the_requests_approver_is_asked() -> None:
    approver = ScriptedApprover("approved")
    content, source, _ = await run(approver)
    assert content == "write_file done"
    assert [r.tool for r in approver.asked] == ["fs__write_file"]
    assert source.calls == [("write_file", {"path": "a"})]
