"""The schedules table (migrations ``0500_*``)."""

from __future__ import annotations

from thalos_bot.storage.migrations import Migration

SCHEDULE_MIGRATIONS: list[Migration] = [
    Migration(
        "0500_schedules",
        """
        CREATE TABLE schedules (
            id              TEXT PRIMARY KEY NOT NULL,
            origin          TEXT NOT NULL CHECK (origin IN ('tool', 'config')),
            owner           TEXT NOT NULL CHECK (owner <> ''),
            roles           TEXT NOT NULL DEFAULT '[]',
            agent_id        TEXT NOT NULL,
            task            TEXT NOT NULL CHECK (length(task) >= 1),
            cron            TEXT,
            at              TEXT,
            timezone        TEXT NOT NULL,
            channel_id      TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            state           TEXT NOT NULL CHECK (state IN ('active', 'done', 'cancelled')),
            next_run        TEXT,
            last_started    TEXT,
            runs            INTEGER NOT NULL DEFAULT 0,
            created_at      TEXT NOT NULL,
            CHECK ((cron IS NULL) <> (at IS NULL)),
            CHECK (state <> 'active' OR next_run IS NOT NULL)
        ) WITHOUT ROWID;
        CREATE INDEX schedules_due ON schedules (state, next_run);
        CREATE INDEX schedules_owner ON schedules (owner, state);
        CREATE INDEX schedules_conversation ON schedules (channel_id, conversation_id, state);
        """,
    ),
]
