"""Audit: approval decisions newest first, filtered by agent, tool, decision and a date
range (days in the limits' time zone), bad filters named, every value escaped."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.dashboard.host import GUEST, OWNER, host_deps, serving
from thalos_bot.dashboard.audit import read_filters
from thalos_bot.dashboard.deps import DashboardDeps
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.storage.audit import AuditQuery, SqliteAudit
from thalos_bot.storage.database import Database
from thalos_bot.storage.protocol import SessionRecord
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.tools.gate import AuditEntry

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
HOSTILE = "<script>alert(1)</script>"


async def _fill(db: Database) -> SqliteAudit:
    sessions, audit = SqliteSessionStore(db), SqliteAudit(db)
    for sid, agent in (("s_help", "helper"), ("s_code", HOSTILE)):
        await sessions.create(
            SessionRecord(SessionId(sid), AgentId(agent), "alice", "open", NOW, NOW)
        )
    for days, sid, tool, decision, by in (
        (3, "s_help", "fs__write", "approved", "telegram:42"),
        (2, "s_code", "shell__run", "denied", HOSTILE),
        (1, "s_help", "shell__run", "timeout", "timeout"),
        (0, "s_help", f"evil__{HOSTILE}", "approved-session", "session approval"),
    ):
        await audit.record(
            AuditEntry(
                NOW - timedelta(days=days),
                SessionId(sid),
                "telegram:42",
                tool,
                "sha256:x",
                decision,  # type: ignore[arg-type]
                by,
            )
        )
    return audit


async def _deps(db: Database) -> DashboardDeps:
    return host_deps(audit=await _fill(db), clock=lambda: NOW, timezone="Europe/Berlin")


def test_filters_read_days_in_the_ledger_zone_with_to_inclusive() -> None:
    filters = read_filters(
        {
            "agent": " helper ",
            "tool": "",
            "decision": "denied",
            "from": "2026-11-29",
            "to": "2026-11-30",
        },
        "Europe/Berlin",
    )
    assert filters.problems == ()
    assert filters.query == AuditQuery(
        agent="helper",
        decision="denied",
        since=datetime(2026, 11, 28, 23, 0, tzinfo=UTC),
        until=datetime(2026, 11, 30, 23, 0, tzinfo=UTC),
        limit=200,
    )


def test_bad_filters_are_named_and_left_out() -> None:
    filters = read_filters({"decision": "maybe", "from": "yesterday", "to": "2026-13-01"}, "UTC")
    assert filters.query == AuditQuery(limit=200)
    assert len(filters.problems) == 3
    assert (
        "“decision” must be one of approved, approved-session, denied, timeout, cancelled"
        in filters.problems[0]
    )
    assert "“from” must be a date like 2026-12-01" in filters.problems[1]


@pytest.mark.anyio
async def test_the_read_model_finds_over_a_real_store(tmp_path: Path) -> None:
    from thalos_bot.service.schema import ALL_MIGRATIONS

    async with await Database.open(tmp_path / "t.db", migrations=ALL_MIGRATIONS) as db:
        audit = await _fill(db)
        query = read_filters({"tool": "shell__run"}, "UTC").query
        found = await audit.search(query)
    assert [(f.agent, f.entry.decision) for f in found] == [
        ("helper", "timeout"),
        (HOSTILE, "denied"),
    ]


def test_the_page_lists_newest_first_and_escapes(tmp_path: Path) -> None:
    with serving(tmp_path / "t.db", _deps, OWNER) as served:
        body = served.client.get("/dashboard/audit").text
        guest = served.as_(GUEST).client.get("/dashboard/audit").text
    assert "<script>" not in body
    assert body.count("&lt;script&gt;alert(1)&lt;/script&gt;") == 3  # agent, decider, tool
    marks = ("approved-session", "timeout", "denied", "approved")
    order = [body.index(f'class="decision {d}"') for d in marks]
    assert order == sorted(order)
    # Every person's decisions: someone who is not an owner is not shown them.
    assert "only the bot&#x27;s owners see it" in guest
    assert "fs__write" not in guest


def test_the_page_filters_by_agent_tool_decision_and_dates(tmp_path: Path) -> None:
    with serving(tmp_path / "t.db", _deps, OWNER) as served:
        get = served.client.get
        by_agent = get("/dashboard/audit", params={"agent": "helper"}).text
        assert "fs__write" in by_agent
        assert 'class="decision denied"' not in by_agent
        by_decision = get("/dashboard/audit", params={"decision": "denied"}).text
        assert "shell__run" in by_decision
        assert "fs__write" not in by_decision
        assert '<option value="denied" selected>denied</option>' in by_decision
        by_tool = get("/dashboard/audit", params={"tool": "fs__write"}).text
        assert "fs__write" in by_tool
        assert "shell__run" not in by_tool
        by_days = get("/dashboard/audit", params={"from": "2026-11-29", "to": "2026-11-29"}).text
        assert 'class="decision denied"' in by_days
        assert 'class="decision timeout"' not in by_days
        assert "fs__write" not in by_days
        nothing = get("/dashboard/audit", params={"agent": "nobody"}).text
        assert "No decision matches." in nothing
        bad = get("/dashboard/audit", params={"from": "soon", "agent": HOSTILE})
        assert bad.status_code == 200
        assert "“from” must be a date like 2026-12-01; it was left out." in bad.text
        assert f'value="{HOSTILE}"' not in bad.text
        assert 'value="&lt;script&gt;alert(1)&lt;/script&gt;"' in bad.text
