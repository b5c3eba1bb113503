"""The permission gate: policy actions, the most specific match, asking, the audit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from tests.tools.conftest import context, tool_call
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.audit import SqliteAudit
from thalos_bot.storage.database import Database
from thalos_bot.storage.protocol import SessionRecord
from thalos_bot.storage.session_approvals import SqliteSessionApprovals
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.tools.approval import (
    ApprovalAnswer,
    ApprovalRequest,
    Verdict,
    arguments_hash,
    preview_arguments,
)
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot.tools.gate import AuditEntry, PermissionGate
from thalos_bot.tools.policy import PolicySet, ToolPolicy, specificity
from thalos_bot.tools.source import SourceStatus, SourceTool
from thalos_bot.tools.types import ToolContext, ToolResult


class FsSource:
    """A stand-in filesystem server: ``write_file`` and ``read_file`` record their calls."""

    name = "fs"

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def tools(self) -> Sequence[SourceTool]:
        return (SourceTool("write_file", "Write."), SourceTool("read_file", "Read."))

    def status(self) -> SourceStatus:
        return SourceStatus("ready", 2)

    async def call(
        self, tool: str, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolResult:
        self.calls.append((tool, dict(arguments)))
        return ToolResult(f"{tool} done")


class ScriptedApprover:
    """Answers each question with the next verdict; ``hold`` keeps it waiting forever."""

    conversation = "console:local"

    def __init__(self, *verdicts: Verdict, hold: bool = False) -> None:
        self.verdicts = list(verdicts)
        self.asked: list[ApprovalRequest] = []
        self.hold = hold
        self.waiting = anyio.Event()

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.asked.append(request)
        self.waiting.set()
        if self.hold:
            await anyio.sleep_forever()
        return ApprovalAnswer(self.verdicts.pop(0), "console")


class ListAudit:
    def __init__(self) -> None:
        self.entries: list[AuditEntry] = []

    async def record(self, entry: AuditEntry) -> None:
        self.entries.append(entry)


def catalog(
    *policies: ToolPolicy, timeout: float = 120.0
) -> tuple[SourceCatalog, FsSource, ListAudit]:
    source, audit = FsSource(), ListAudit()
    policy_set = PolicySet(policies)
    gate = PermissionGate(policy_set, timeout=timeout, audit=audit)
    return SourceCatalog([source], policy_set, gate=gate), source, audit


def asked(approver: ScriptedApprover | None, session: str = "s_test") -> ToolContext:
    return replace(context(), approver=approver, session_id=SessionId(session))


ASK_WRITES = ToolPolicy("fs__write_*", action="ask")


def test_most_specific_glob_decides_and_ties_go_to_the_stricter() -> None:
    policies = PolicySet(
        [
            ToolPolicy("*", action="deny"),
            ToolPolicy("fs__*", action="allow"),
            ToolPolicy("fs__write_*", action="ask"),
            ToolPolicy("fs__write_file", action="allow"),
        ]
    )
    assert policies.action("fs__write_file") == "allow"  # no wildcard at all
    assert policies.action("fs__write_dir") == "ask"  # one wildcard, longest literal
    assert policies.action("fs__read_file") == "allow"
    assert policies.action("web__fetch") == "deny"
    assert PolicySet().action("fs__write_file") == "allow"  # no policy: allowed
    tie = PolicySet(
        [ToolPolicy("fs__?rite", action="allow"), ToolPolicy("fs__w?ite", action="ask")]
    )
    # one wildcard each; "fs__w?ite" has the longer literal prefix
    assert tie.action("fs__write") == "ask"
    same = PolicySet([ToolPolicy("a*", action="ask"), ToolPolicy("a*", action="deny")])
    assert same.action("ab") == "deny"
    assert specificity("fs__[wx]rite") == specificity("fs__?rite")


def test_roles_still_add_up_and_a_policy_without_action_does_not_change_it() -> None:
    policies = PolicySet(
        [ToolPolicy("fs__*", frozenset({"admin"})), ToolPolicy("fs__write_*", action="ask")]
    )
    assert policies.required_roles("fs__write_file") == {"admin"}
    assert policies.action("fs__write_file") == "ask"


@pytest.mark.anyio
async def test_deny_is_a_readable_refusal_and_audited() -> None:
    tools, source, audit = catalog(ToolPolicy("fs__write_*", action="deny"))
    result = await tools.call(tool_call("fs__write_file", path="a", content="x"), asked(None))
    assert result.outcome == "refused"
    assert "not allowed here" in result.content
    assert source.calls == []
    assert [(e.decision, e.decided_by) for e in audit.entries] == [("denied", "policy")]


@pytest.mark.anyio
async def test_ask_without_an_approver_is_refused() -> None:
    tools, source, audit = catalog(ASK_WRITES)
    result = await tools.call(tool_call("fs__write_file", path="a"), asked(None))
    assert result.outcome == "refused"
    assert "nobody to ask" in result.content
    assert source.calls == []
    assert audit.entries[0].decided_by == "no approver"


@pytest.mark.anyio
async def test_approve_runs_the_tool_once_and_asks_again_next_time() -> None:
    tools, source, audit = catalog(ASK_WRITES)
    approver = ScriptedApprover("approved", "denied")
    first = await tools.call(tool_call("fs__write_file", path="a"), asked(approver))
    second = await tools.call(tool_call("fs__write_file", path="b"), asked(approver))
    assert first.content == "write_file done"
    assert second.outcome == "refused"
    assert "did not approve" in second.content
    assert source.calls == [("write_file", {"path": "a"})]
    assert [e.decision for e in audit.entries] == ["approved", "denied"]
    assert audit.entries[0].arguments_hash == arguments_hash({"path": "a"})
    assert audit.entries[0].conversation == "console:local"


@pytest.mark.anyio
async def test_approve_for_the_session_is_remembered_for_that_session_only() -> None:
    tools, source, audit = catalog(ASK_WRITES)
    approver = ScriptedApprover("approved-session", "denied")
    await tools.call(tool_call("fs__write_file", path="a"), asked(approver))
    again = await tools.call(tool_call("fs__write_file", path="b"), asked(approver))
    other = await tools.call(tool_call("fs__write_file", path="c"), asked(approver, "s_other"))
    assert again.content == "write_file done"
    assert other.outcome == "refused"  # the other session was asked, and said no
    assert len(approver.asked) == 2
    assert [args["path"] for _, args in source.calls] == ["a", "b"]
    assert [(e.decision, e.decided_by) for e in audit.entries] == [
        ("approved-session", "console"),
        ("approved", "session approval"),
        ("denied", "console"),
    ]


@pytest.mark.anyio
async def test_timeout_is_a_denial_the_model_reads() -> None:
    tools, source, audit = catalog(ASK_WRITES, timeout=0.05)
    result = await tools.call(
        tool_call("fs__write_file", path="a"), asked(ScriptedApprover(hold=True))
    )
    assert result.outcome == "refused"
    assert "was not approved" in result.content
    assert "0.05 seconds" in result.content
    assert source.calls == []
    assert [e.decision for e in audit.entries] == ["timeout"]
    assert tools.gate.waiting_for(SessionId("s_test")) == []


@pytest.mark.anyio
async def test_cancel_while_waiting_withdraws_the_question() -> None:
    tools, source, audit = catalog(ASK_WRITES)
    approver = ScriptedApprover(hold=True)
    async with anyio.create_task_group() as group:
        group.start_soon(tools.call, tool_call("fs__write_file", path="a"), asked(approver))
        await approver.waiting.wait()
        assert tools.gate.waiting_for(SessionId("s_test")) == ["fs__write_file"]
        group.cancel_scope.cancel()
    assert source.calls == []
    assert [e.decision for e in audit.entries] == ["cancelled"]
    assert tools.gate.waiting_for(SessionId("s_test")) == []


@pytest.mark.anyio
async def test_parallel_calls_only_the_asked_one_waits() -> None:
    tools, source, _ = catalog(ASK_WRITES)
    approver = ScriptedApprover(hold=True)
    read_done = anyio.Event()

    async def read() -> None:
        result = await tools.call(tool_call("fs__read_file"), asked(approver))
        assert result.content == "read_file done"
        read_done.set()

    async with anyio.create_task_group() as group:
        group.start_soon(tools.call, tool_call("fs__write_file", path="a"), asked(approver))
        group.start_soon(read)
        await approver.waiting.wait()
        await read_done.wait()  # the read finished while the write still waits
        assert source.calls == [("read_file", {})]
        assert tools.gate.waiting_for(SessionId("s_test")) == ["fs__write_file"]
        group.cancel_scope.cancel()


@pytest.mark.anyio
async def test_an_approver_that_fails_means_no() -> None:
    class Broken:
        conversation = "telegram:1"

        async def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
            raise RuntimeError("network down")

    tools, source, audit = catalog(ASK_WRITES)
    with capture_logs() as logs:
        result = await tools.call(
            tool_call("fs__write_file", path="a"), replace(context(), approver=Broken())
        )
    assert result.outcome == "refused"
    assert audit.entries[0].decided_by == "error"
    assert source.calls == []
    assert any(e["event"] == "tool-approval-failed" for e in logs)


@pytest.mark.anyio
async def test_decisions_are_logged_without_argument_values() -> None:
    tools, _, _ = catalog(ASK_WRITES)
    with capture_logs() as logs:
        await tools.call(
            tool_call("fs__write_file", path="/etc/secret-path", content="hunter2"),
            asked(ScriptedApprover("approved")),
        )
    [event] = [e for e in logs if e["event"] == "tool-approval"]
    assert event["decision"] == "approved"
    assert "hunter2" not in repr(logs)
    assert "secret-path" not in repr(logs)


def test_the_preview_cuts_long_values() -> None:
    text = preview_arguments({"path": "notes.md", "content": "x" * 5000})
    assert text.startswith('{"path": "notes.md", "content": "xxx')
    assert "(5000 chars)" in text
    assert len(text) < 200


@pytest.mark.anyio
@pytest.mark.parametrize("decision", ["approved", "timeout"])
async def test_the_audit_table_keeps_decisions(decision: str) -> None:
    async with await Database.open_memory(migrations=ALL_MIGRATIONS) as db:
        audit = SqliteAudit(db)
        tools, _, _ = catalog(ASK_WRITES, timeout=0.05)
        tools.gate.audit = audit
        approver = ScriptedApprover("approved", hold=decision == "timeout")
        await tools.call(tool_call("fs__write_file", path="a"), asked(approver))
        [entry] = await audit.since()
        assert entry.decision == decision
        assert entry.tool == "fs__write_file"
        assert await audit.since(entry.at.replace(year=entry.at.year + 1)) == []


@pytest.mark.anyio
async def test_approve_for_the_session_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "thalos.db"
    now = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    for sid in ("s_test", "s_other"):
        async with await Database.open(path, migrations=ALL_MIGRATIONS) as db:
            await SqliteSessionStore(db).create(
                SessionRecord(SessionId(sid), AgentId("helper"), "alice", "open", now, now)
            )

    def stored_catalog(db: Database) -> tuple[SourceCatalog, FsSource, ListAudit]:
        source, audit = FsSource(), ListAudit()
        policies = PolicySet([ASK_WRITES])
        gate = PermissionGate(policies, audit=audit, approvals=SqliteSessionApprovals(db))
        return SourceCatalog([source], policies, gate=gate), source, audit

    async with await Database.open(path, migrations=ALL_MIGRATIONS) as db:
        tools, _, _ = stored_catalog(db)
        await tools.call(
            tool_call("fs__write_file", path="a"), asked(ScriptedApprover("approved-session"))
        )
    # The daemon restarts: a new gate over the same database.
    async with await Database.open(path, migrations=ALL_MIGRATIONS) as db:
        tools, source, audit = stored_catalog(db)
        nobody = ScriptedApprover()  # no answer to give: asking would be a denial
        again = await tools.call(tool_call("fs__write_file", path="b"), asked(nobody))
        other = await tools.call(
            tool_call("fs__write_file", path="c"), asked(ScriptedApprover("denied"), "s_other")
        )
    assert again.content == "write_file done"
    assert nobody.asked == []
    assert other.outcome == "refused"  # only the session it was given for
    assert [args["path"] for _, args in source.calls] == ["b"]
    assert [(e.decision, e.decided_by) for e in audit.entries] == [
        ("approved", "session approval"),
        ("denied", "console"),
    ]
