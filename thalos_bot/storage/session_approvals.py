"""Session approvals in the database: the tools a person approved "for this session".

They belong to the session, so they last as long as it does, across restarts: the
session a conversation is bound to after a restart is the same one, and asking again
would break the promise of the button. ``/new`` starts a new session, which asks again;
a session's rows go with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from thalos_bot.domain.ids import SessionId
from thalos_bot.storage.database import Database, encode_time, fetch_all
from thalos_bot.storage.migrations import Migration

SESSION_APPROVAL_MIGRATIONS: list[Migration] = [
    Migration(
        "0601_session_approvals",
        """
        CREATE TABLE session_approvals (
            session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
            tool        TEXT NOT NULL,
            approved_at TEXT NOT NULL,
            PRIMARY KEY (session_id, tool)
        ) WITHOUT ROWID;
        """,
    ),
]


@dataclass(slots=True)
class SqliteSessionApprovals:
    """A :class:`~thalos_bot.tools.gate.SessionApprovals` over the daemon's database."""

    database: Database

    async def approved(self, session_id: SessionId) -> frozenset[str]:
        async with self.database.read() as conn:
            rows = await fetch_all(
                conn, "SELECT tool FROM session_approvals WHERE session_id = ?", (session_id,)
            )
        return frozenset(str(row["tool"]) for row in rows)

    async def remember(self, session_id: SessionId, tool: str, at: datetime) -> None:
        async with self.database.transaction() as conn:
            await conn.execute(
                "INSERT INTO session_approvals (session_id, tool, approved_at) VALUES (?, ?, ?)"
                " ON CONFLICT (session_id, tool) DO NOTHING",
                (session_id, tool, encode_time(at)),
            )
