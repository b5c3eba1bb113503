"""The schedules table (migrations ``0500_*``).

``0501_schedule_pause``: a schedule may be ``paused`` (it keeps its next run but is not
claimed until resumed), and each run's outcome is kept (``last_result``,
``last_finished``). SQLite cannot change a CHECK in place, so the table is rebuilt."""

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
    Migration(
        "0501_schedule_pause",
        """
        CREATE TABLE schedules_0501 (
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
            state           TEXT NOT NULL
                CHECK (state IN ('active', 'paused', 'done', 'cancelled')),
            next_run        TEXT,
            last_started    TEXT,
            runs            INTEGER NOT NULL DEFAULT 0,
            created_at      TEXT NOT NULL,
            last_result     TEXT,
            last_finished   TEXT,
            CHECK ((cron IS NULL) <> (at IS NULL)),
            CHECK (state <> 'active' OR next_run IS NOT NULL)
        ) WITHOUT ROWID;
        INSERT INTO schedules_0501 (id, origin, owner, roles, agent_id, task, cron, at,
            timezone, channel_id, conversation_id, state, next_run, last_started, runs,
            created_at)
        SELECT id, origin, owner, roles, agent_id, task, cron, at, timezone, channel_id,
            conversation_id, state, next_run, last_started, runs, created_at FROM schedules;
        DROP TABLE schedules;
        ALTER TABLE schedules_0501 RENAME TO schedules;
        CREATE INDEX schedules_due ON schedules (state, next_run);
        CREATE INDEX schedules_owner ON schedules (owner, state);
        CREATE INDEX schedules_conversation ON schedules (channel_id, conversation_id, state);
        """,
    ),
]
