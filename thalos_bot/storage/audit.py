"""The approvals audit: one row per decision of the permission gate.

A row says when, in which session and conversation, which tool, a hash of its arguments
(never the values), the decision, and who or what decided. ``thalos-bot audit`` lists
them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from thalos_bot.domain.ids import SessionId
from thalos_bot.storage.database import Database, decode_time, encode_time, fetch_all
from thalos_bot.storage.migrations import Migration
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
        return [
            AuditEntry(
                decode_time(row["at"]),
                SessionId(row["session_id"]),
                row["conversation"],
                row["tool"],
                row["arguments_hash"],
                _DECISIONS[row["decision"]],
                row["decided_by"],
            )
            for row in rows
        ]
