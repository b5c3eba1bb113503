"""The reads the dashboard makes of the stores, against SQLite and PostgreSQL: recent
sessions newest first, spending per day over every principal, and the audit searched by
agent, tool, decision and time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.storage.conftest import Backend
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.domain.messages import Message
from thalos_bot.domain.pricing import ModelUsages
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.audit import AuditQuery, SqliteAudit
from thalos_bot.storage.database import Database
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.storage.pg.approvals import PgAudit
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.pg.sessions import PgSessionStore
from thalos_bot.storage.protocol import SessionRecord, SessionStore, Spend
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.storage.usage import DayUsage, MemoryUsageLedger
from thalos_bot.tools.gate import AuditEntry

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


async def _session(store: SessionStore, sid: str, agent: str, minutes: int) -> SessionId:
    at = T0 + timedelta(minutes=minutes)
    session_id = SessionId(sid)
    await store.create(SessionRecord(session_id, AgentId(agent), "alice", "open", at, at))
    return session_id


async def test_recent_sessions_come_newest_first_with_their_counts(backend: Backend) -> None:
    store = backend.sessions
    assert await store.recent() == []  # type: ignore[attr-defined]
    old = await _session(store, "s_old", "helper", 0)
    new = await _session(store, "s_new", "coder", 5)
    await store.commit_turn(
        old, [Message.user("hello")], TokenUsage(10, 4), T0 + timedelta(minutes=9)
    )
    await store.close(new, T0 + timedelta(minutes=6))
    recent = await store.recent(10)  # type: ignore[attr-defined]
    assert [(r.id, r.agent_id, r.status, r.turns, r.usage.total) for r in recent] == [
        ("s_old", "helper", "open", 1, 14),
        ("s_new", "coder", "closed", 0, 0),
    ]
    assert [r.id for r in await store.recent(1)] == ["s_old"]  # type: ignore[attr-defined]


async def test_the_memory_store_lists_recent_sessions_the_same_way() -> None:
    store = MemorySessionStore()
    await _session(store, "s_a", "helper", 0)
    await _session(store, "s_b", "helper", 3)
    assert [r.id for r in await store.recent(5)] == ["s_b", "s_a"]


async def test_days_add_every_principal_up_per_day_in_the_range(backend: Backend) -> None:
    ledger = backend.ledger
    await ledger.add("alice", "2026-11-30", TokenUsage(10, 5), 0.5)
    await ledger.add("bob", "2026-11-30", TokenUsage(1, 1, 2, 3), 0.25)
    await ledger.add("alice", "2026-12-01", TokenUsage(7, 0), 0.125)
    await ledger.add("alice", "2026-12-02", TokenUsage(100, 0), 1.0)
    await ledger.add("alice", "2026-11-29", TokenUsage(100, 0), 1.0)
    days = await ledger.days("2026-11-30", "2026-12-01")
    assert days == {
        "2026-11-30": DayUsage(TokenUsage(11, 6, 2, 3), 0.75, 2),
        "2026-12-01": DayUsage(TokenUsage(7, 0), 0.125, 1),
    }
    assert list(days) == ["2026-11-30", "2026-12-01"]
    assert await ledger.days("2027-01-01", "2027-01-31") == {}


async def test_the_memory_ledger_adds_days_up_the_same_way() -> None:
    ledger = MemoryUsageLedger()
    ledger.take(Spend("alice", "2026-12-01", TokenUsage(3, 1), 0.5, "s", ModelUsages()))
    await ledger.add("bob", "2026-12-01", TokenUsage(1, 1), 0.25)
    await ledger.add("bob", "2026-12-03", TokenUsage(1, 1), 0.25)
    assert await ledger.days("2026-12-01", "2026-12-02") == {
        "2026-12-01": DayUsage(TokenUsage(4, 2), 0.75, 2)
    }


@dataclass(frozen=True, slots=True)
class AuditStores:
    sessions: SessionStore
    audit: SqliteAudit | PgAudit


@pytest.fixture(params=["sqlite", "postgres"])
async def audit_stores(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[AuditStores]:
    if request.param == "sqlite":
        async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:
            yield AuditStores(SqliteSessionStore(db), SqliteAudit(db))
        return
    async with await PgDatabase.open(request.getfixturevalue("migrated_url")) as pg:
        yield AuditStores(PgSessionStore(pg), PgAudit(pg))


def _decision(seconds: int, sid: str, tool: str, decision: str) -> AuditEntry:
    return AuditEntry(
        T0 + timedelta(seconds=seconds),
        SessionId(sid),
        "telegram:42",
        tool,
        "sha256:abc",
        decision,  # type: ignore[arg-type]
        "telegram:42",
    )


async def test_the_audit_is_searched_by_agent_tool_decision_and_time(
    audit_stores: AuditStores,
) -> None:
    sessions, audit = audit_stores.sessions, audit_stores.audit
    await _session(sessions, "s_help", "helper", 0)
    await _session(sessions, "s_code", "coder", 0)
    entries = [
        _decision(10, "s_help", "fs__write", "approved"),
        _decision(20, "s_code", "fs__write", "denied"),
        _decision(30, "s_help", "shell__run", "denied"),
        _decision(40, "s_gone", "fs__write", "timeout"),
    ]
    for entry in entries:
        await audit.record(entry)

    async def found(**query: object) -> list[tuple[int, str | None]]:
        rows = await audit.search(AuditQuery(**query))  # type: ignore[arg-type]
        return [(int((r.entry.at - T0).total_seconds()), r.agent) for r in rows]

    assert await found() == [(40, None), (30, "helper"), (20, "coder"), (10, "helper")]
    assert await found(agent="helper") == [(30, "helper"), (10, "helper")]
    assert await found(tool="fs__write") == [(40, None), (20, "coder"), (10, "helper")]
    assert await found(decision="denied") == [(30, "helper"), (20, "coder")]
    assert await found(agent="helper", decision="denied") == [(30, "helper")]
    since, until = T0 + timedelta(seconds=20), T0 + timedelta(seconds=40)
    assert await found(since=since, until=until) == [(30, "helper"), (20, "coder")]
    assert await found(limit=1) == [(40, None)]
    assert await found(agent="nobody") == []
    first = (await audit.search(AuditQuery(limit=1)))[0]
    assert first.entry == entries[-1]
