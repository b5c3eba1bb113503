"""The permission gate's stores, run against SQLite and PostgreSQL: the audit lists
decisions oldest first from a time on, and a session's approvals last as long as the
session (across a reopen) and go with it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Protocol

import pytest

from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.audit import SqliteAudit
from thalos_bot.storage.database import Database
from thalos_bot.storage.pg.approvals import PgAudit, PgSessionApprovals
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.pg.sessions import PgSessionStore
from thalos_bot.storage.protocol import SessionRecord, SessionStore
from thalos_bot.storage.session_approvals import SqliteSessionApprovals
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.tools.gate import AuditEntry, SessionApprovals

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 12, 1, 9, 0, 0, 250_001, tzinfo=UTC)
SID, OTHER = SessionId("s_gate"), SessionId("s_other")


class Audit(Protocol):
    async def record(self, entry: AuditEntry) -> None: ...
    async def since(self, at: datetime | None = None, *, limit: int = 1000) -> list[AuditEntry]: ...


@dataclass(frozen=True, slots=True)
class GateStores:
    sessions: SessionStore
    audit: Audit
    approvals: SessionApprovals
    delete_session: Callable[[SessionId], Awaitable[None]]


Opener = Callable[[], AbstractAsyncContextManager[GateStores]]


@pytest.fixture(params=["sqlite", "postgres"])
def open_stores(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    if request.param == "sqlite":

        @asynccontextmanager
        async def sqlite() -> AsyncIterator[GateStores]:
            async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:

                async def delete(session_id: SessionId) -> None:
                    async with db.transaction() as conn:
                        await conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

                yield GateStores(
                    SqliteSessionStore(db), SqliteAudit(db), SqliteSessionApprovals(db), delete
                )

        return sqlite
    url = request.getfixturevalue("migrated_url")

    @asynccontextmanager
    async def postgres() -> AsyncIterator[GateStores]:
        async with await PgDatabase.open(url) as db:

            async def delete(session_id: SessionId) -> None:
                async with db.transaction() as conn:
                    await conn.execute("DELETE FROM sessions WHERE id = %s", (session_id,))

            yield GateStores(PgSessionStore(db), PgAudit(db), PgSessionApprovals(db), delete)

    return postgres


def _entry(seconds: float, tool: str = "fs__write", decision: str = "approved") -> AuditEntry:
    return AuditEntry(
        T0 + timedelta(seconds=seconds),
        SID,
        "telegram:42",
        tool,
        "sha256:abc",
        decision,  # type: ignore[arg-type]
        "telegram:42",
    )


async def test_the_audit_lists_decisions_oldest_first_from_a_time_on(
    open_stores: Opener,
) -> None:
    async with open_stores() as stores:
        assert await stores.audit.since() == []
        later, first, same_time = _entry(5, "b"), _entry(1, "a", "denied"), _entry(5, "c")
        for entry in (later, first, same_time):
            await stores.audit.record(entry)
        assert await stores.audit.since() == [first, later, same_time]
        assert await stores.audit.since(T0 + timedelta(seconds=5)) == [later, same_time]
        assert await stores.audit.since(limit=2) == [first, later]
        assert await stores.audit.since(T0 + timedelta(days=1)) == []


async def test_session_approvals_last_with_the_session_and_go_with_it(
    open_stores: Opener,
) -> None:
    async with open_stores() as stores:
        for sid in (SID, OTHER):
            await stores.sessions.create(SessionRecord(sid, AgentId("a"), "alice", "open", T0, T0))
        await stores.approvals.remember(SID, "fs__write", T0)
        await stores.approvals.remember(SID, "fs__write", T0)  # again: still one
        await stores.approvals.remember(SID, "web__fetch", T0)
        await stores.approvals.remember(OTHER, "shell__run", T0)
    async with open_stores() as stores:
        assert await stores.approvals.approved(SID) == {"fs__write", "web__fetch"}
        await stores.delete_session(SID)
        assert await stores.approvals.approved(SID) == frozenset()
        assert await stores.approvals.approved(OTHER) == {"shell__run"}
