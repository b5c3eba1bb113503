"""The approvals audit: one row per decision of the permission gate.

A row says when, in which session and conversation, which tool, a hash of its arguments
(never the values), the decision, and who or what decided. ``thalos-bot audit`` lists
them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from thalos_bot.domain.ids import SessionId
from thalos_bot.storage.database import Database, decode_time, encode_time, fetch_all
from thalos_bot.storage.migrations import Migration
from thalos_bot.storage.usage import Row
from thalos_bot.tools.gate import AuditEntry, Decision

AUDIT_MIGRATIONS: list[Migration] = [
    Migration(
        "0600_tool_approvals",
        """
        CREATE TABLE tool_approvals (
            id             INTEGER PRIMARY KEY,
            at             TEXT NOT NULL,
            session_id     TEXT NOT NULL,
            conversation   TEXT NOT NULL,
            tool           TEXT NOT NULL,
            arguments_hash TEXT NOT NULL,
            decision       TEXT NOT NULL CHECK (decision IN
                ('approved', 'approved-session', 'denied', 'timeout', 'cancelled')),
            decided_by     TEXT NOT NULL
        );
        CREATE INDEX tool_approvals_at ON tool_approvals (at);
        """,
    ),
]

_DECISIONS: dict[str, Decision] = {
    "approved": "approved",
    "approved-session": "approved-session",
    "denied": "denied",
    "timeout": "timeout",
    "cancelled": "cancelled",
}


@dataclass(frozen=True, slots=True)
class AuditQuery:
    """Which decisions to find: each given field narrows the search. ``since`` is
    inclusive, ``until`` exclusive."""

    agent: str | None = None
    tool: str | None = None
    decision: Decision | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 200


@dataclass(frozen=True, slots=True)
class FoundDecision:
    """A decision with the agent of its session (None when the session is gone)."""

    entry: AuditEntry
    agent: str | None


def search_sql(query: AuditQuery, mark: str, time: Any) -> tuple[str, list[Any]]:
    """The search's SQL, newest first, with ``mark`` as the placeholder and ``time``
    turning a datetime into the column's value (the two databases differ only there)."""
    where: list[str] = []
    params: list[Any] = []
    clauses: Mapping[str, object] = {
        "s.agent_id = {}": query.agent,
        "a.tool = {}": query.tool,
        "a.decision = {}": query.decision,
        "a.at >= {}": None if query.since is None else time(query.since),
        "a.at < {}": None if query.until is None else time(query.until),
    }
    for clause, value in clauses.items():
        if value is not None:
            where.append(clause.format(mark))
            params.append(value)
    sql = (
        "SELECT a.at, a.session_id, a.conversation, a.tool, a.arguments_hash, a.decision,"
        " a.decided_by, s.agent_id FROM tool_approvals AS a"
        " LEFT JOIN sessions AS s ON s.id = a.session_id"
    )
    if where:
        sql += " WHERE " + " AND ".join(where)
    params.append(max(0, query.limit))
    return sql + f" ORDER BY a.at DESC, a.id DESC LIMIT {mark}", params


@dataclass(slots=True)
class SqliteAudit:
    """An :class:`~thalos_bot.tools.gate.AuditSink` over the daemon's database."""

    database: Database

    async def record(self, entry: AuditEntry) -> None:
        async with self.database.transaction() as conn:
            await conn.execute(
                "INSERT INTO tool_approvals (at, session_id, conversation, tool,"
                " arguments_hash, decision, decided_by) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    encode_time(entry.at),
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
        bound = "" if at is None else encode_time(at)
        async with self.database.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT at, session_id, conversation, tool, arguments_hash, decision,"
                " decided_by FROM tool_approvals WHERE at >= ? ORDER BY at, id LIMIT ?",
                (bound, limit),
            )
        return [entry_of(row, decode_time(row["at"])) for row in rows]

    async def search(self, query: AuditQuery) -> list[FoundDecision]:
        """The decisions ``query`` asks for, newest first, at most ``query.limit``."""
        sql, params = search_sql(query, "?", encode_time)
        async with self.database.read() as conn:
            rows = await fetch_all(conn, sql, params)
        return [
            FoundDecision(entry_of(row, decode_time(row["at"])), row["agent_id"]) for row in rows
        ]


def entry_of(row: Row, at: datetime) -> AuditEntry:
    """A ``tool_approvals`` row (either database's) as an entry."""
    return AuditEntry(
        at,
        SessionId(row["session_id"]),
        row["conversation"],
        row["tool"],
        row["arguments_hash"],
        _DECISIONS[row["decision"]],
        row["decided_by"],
    )
