"""The permission gate's two tables on PostgreSQL: the audit of every decision (the
interface of :class:`~thalos_bot.storage.audit.SqliteAudit`) and the tools approved for
the rest of a session (of :class:`~thalos_bot.storage.session_approvals.
SqliteSessionApprovals`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from thalos_bot.domain.ids import SessionId
from thalos_bot.storage.audit import AuditQuery, FoundDecision, entry_of, search_sql
from thalos_bot.storage.database import as_utc
from thalos_bot.storage.pg.database import PgDatabase, fetch_all
from thalos_bot.tools.gate import AuditEntry


@dataclass(slots=True)
class PgAudit:
    """An :class:`~thalos_bot.tools.gate.AuditSink` over a :class:`PgDatabase`."""

    database: PgDatabase

    async def record(self, entry: AuditEntry) -> None:
        async with self.database.transaction() as conn:
            await conn.execute(
                "INSERT INTO tool_approvals (at, session_id, conversation, tool,"
                " arguments_hash, decision, decided_by) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (
                    as_utc(entry.at),
                    entry.session_id,
                    entry.conversation,
                    entry.tool,
                    entry.arguments_hash,
                    entry.decision,
                    entry.decided_by,
                ),
            )

    async def since(self, at: datetime | None = None, *, limit: int = 1000) -> list[AuditEntry]:
        """Decisions from ``at`` on (all when None), oldest first, at most ``limit``."""
        async with self.database.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT at, session_id, conversation, tool, arguments_hash, decision,"
                " decided_by FROM tool_approvals WHERE %s::timestamptz IS NULL OR at >= %s"
                " ORDER BY at, id LIMIT %s",
                (None if at is None else as_utc(at), None if at is None else as_utc(at), limit),
            )
        return [entry_of(row, as_utc(row["at"])) for row in rows]

    async def search(self, query: AuditQuery) -> list[FoundDecision]:
        """The decisions ``query`` asks for, newest first, at most ``query.limit``."""
        sql, params = search_sql(query, "%s", as_utc)
        async with self.database.read() as conn:
            rows = await fetch_all(conn, sql, params)
        return [FoundDecision(entry_of(row, as_utc(row["at"])), row["agent_id"]) for row in rows]


@dataclass(slots=True)
class PgSessionApprovals:
    """A :class:`~thalos_bot.tools.gate.SessionApprovals` over a :class:`PgDatabase`."""

    database: PgDatabase

    async def approved(self, session_id: SessionId) -> frozenset[str]:
        async with self.database.read() as conn:
            rows = await fetch_all(
                conn, "SELECT tool FROM session_approvals WHERE session_id = %s", (session_id,)
            )
        return frozenset(str(row["tool"]) for row in rows)

    async def remember(self, session_id: SessionId, tool: str, at: datetime) -> None:
        async with self.database.transaction() as conn:
            await conn.execute(
                "INSERT INTO session_approvals (session_id, tool, approved_at)"
                " VALUES (%s, %s, %s) ON CONFLICT (session_id, tool) DO NOTHING",
                (session_id, tool, as_utc(at)),
            )
