"""The PostgreSQL schema of the ports that have a PostgreSQL implementation so far.

Names match the SQLite migrations they mirror (see :data:`thalos_bot.service.schema.
ALL_MIGRATIONS`), so the two schema histories can be compared name by name. Times are
``timestamptz`` (microseconds, like the SQLite ISO text); sizes are ``bigint``.

This module and the lists it gathers load no database driver: the commands that only
compare schema histories (``check``, ``people``, ``doctor``) stay without psycopg.
"""

from __future__ import annotations

from thalos_bot.hooks.schema import PG_HOOK_MIGRATIONS
from thalos_bot.storage.migrations import Migration
from thalos_bot.storage.pg.cluster_schema import CLUSTER_MIGRATIONS
from thalos_bot.storage.pg.memory_schema import PG_MEMORY_MIGRATIONS
from thalos_bot.storage.pg.store_migrations import (
    PG_API_CONVERSATION_MIGRATIONS,
    PG_API_KEY_MIGRATIONS,
    PG_LINK_MIGRATIONS,
    PG_RUN_COST_MIGRATIONS,
    PG_VOICE_MIGRATIONS,
)
from thalos_bot.storage.usage import ALERTS_MIGRATION
from thalos_bot.storage.usage_breakdown import PG_MIGRATION as BREAKDOWN_PG_MIGRATION

PG_MIGRATIONS: list[Migration] = [
    Migration(
        "0001_sessions",
        """
        CREATE TABLE sessions (
            id                 TEXT PRIMARY KEY,
            agent_id           TEXT NOT NULL,
            owner              TEXT NOT NULL,
            status             TEXT NOT NULL CHECK (status IN ('open', 'closed')),
            created_at         TIMESTAMPTZ NOT NULL,
            updated_at         TIMESTAMPTZ NOT NULL,
            turns              BIGINT NOT NULL DEFAULT 0,
            input_tokens       BIGINT NOT NULL DEFAULT 0,
            output_tokens      BIGINT NOT NULL DEFAULT 0,
            cache_read_tokens  BIGINT NOT NULL DEFAULT 0,
            cache_write_tokens BIGINT NOT NULL DEFAULT 0
        );
        CREATE INDEX sessions_owner_updated ON sessions (owner, updated_at);
        """,
    ),
    Migration(
        "0002_session_messages",
        """
        CREATE TABLE session_messages (
            session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
            seq        BIGINT NOT NULL CHECK (seq >= 0),
            role       TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
            content    TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        );
        """,
    ),
    Migration(
        "0003_conversation_bindings",
        """
        CREATE TABLE conversation_bindings (
            channel_id      TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            session_id      TEXT NOT NULL,
            agent_id        TEXT NOT NULL,
            last_activity   TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (channel_id, conversation_id)
        );
        CREATE INDEX conversation_bindings_session ON conversation_bindings (session_id);
        """,
    ),
    Migration(
        "0004_session_context",
        """
        CREATE TABLE session_context (
            session_id       TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
            summary          TEXT NOT NULL DEFAULT '',
            summary_until    BIGINT NOT NULL DEFAULT 0 CHECK (summary_until >= 0),
            input_tokens     BIGINT NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
            estimated_tokens BIGINT NOT NULL DEFAULT 0 CHECK (estimated_tokens >= 0)
        );
        """,
    ),
    Migration(
        "0510_outbox",
        """
        CREATE TABLE outbox (
            position        BIGINT GENERATED ALWAYS AS IDENTITY,
            id              TEXT PRIMARY KEY,
            channel_id      TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            kind            TEXT NOT NULL CHECK (kind IN ('answer', 'notice')),
            text            TEXT NOT NULL,
            state           TEXT NOT NULL DEFAULT 'pending'
                            CHECK (state IN ('pending', 'delivered', 'failed')),
            progress        JSONB NOT NULL DEFAULT '{}',
            created_at      TIMESTAMPTZ NOT NULL,
            updated_at      TIMESTAMPTZ NOT NULL,
            done_at         TIMESTAMPTZ
        );
        CREATE INDEX outbox_pending ON outbox (channel_id, created_at, position)
            WHERE state = 'pending';
        CREATE INDEX outbox_done ON outbox (done_at);
        """,
    ),
    Migration(
        "0610_usage_daily",
        """
        CREATE TABLE usage_daily (
            principal          TEXT NOT NULL,
            day                TEXT NOT NULL,
            input_tokens       BIGINT NOT NULL DEFAULT 0,
            output_tokens      BIGINT NOT NULL DEFAULT 0,
            cache_read_tokens  BIGINT NOT NULL DEFAULT 0,
            cache_write_tokens BIGINT NOT NULL DEFAULT 0,
            cost_usd           DOUBLE PRECISION NOT NULL DEFAULT 0,
            turns              BIGINT NOT NULL DEFAULT 0,
            PRIMARY KEY (principal, day)
        );
        """,
    ),
    Migration(
        "0611_usage_session_models",
        """
        CREATE TABLE usage_session_models (
            session_id         TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
            model              TEXT NOT NULL,
            input_tokens       BIGINT NOT NULL DEFAULT 0,
            output_tokens      BIGINT NOT NULL DEFAULT 0,
            cache_read_tokens  BIGINT NOT NULL DEFAULT 0,
            cache_write_tokens BIGINT NOT NULL DEFAULT 0,
            PRIMARY KEY (session_id, model)
        );
        """,
    ),
    ALERTS_MIGRATION,
    Migration(
        "0520_chat_marks",
        """
        CREATE TABLE chat_marks (
            channel_id TEXT NOT NULL,
            chat       TEXT NOT NULL,
            message_id BIGINT NOT NULL CHECK (message_id > 0),
            updated_at TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (channel_id, chat)
        );
        """,
    ),
    Migration(
        "0500_schedules",
        """
        CREATE TABLE schedules (
            id              TEXT PRIMARY KEY,
            origin          TEXT NOT NULL CHECK (origin IN ('tool', 'config')),
            owner           TEXT NOT NULL CHECK (owner <> ''),
            roles           TEXT NOT NULL DEFAULT '[]',
            agent_id        TEXT NOT NULL,
            task            TEXT NOT NULL CHECK (length(task) >= 1),
            cron            TEXT,
            at              TIMESTAMPTZ,
            timezone        TEXT NOT NULL,
            channel_id      TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            state           TEXT NOT NULL CHECK (state IN ('active', 'done', 'cancelled')),
            next_run        TIMESTAMPTZ,
            last_started    TIMESTAMPTZ,
            runs            BIGINT NOT NULL DEFAULT 0,
            created_at      TIMESTAMPTZ NOT NULL,
            CHECK ((cron IS NULL) <> (at IS NULL)),
            CHECK (state <> 'active' OR next_run IS NOT NULL)
        );
        CREATE INDEX schedules_due ON schedules (next_run) WHERE state = 'active';
        CREATE INDEX schedules_owner ON schedules (owner, state);
        CREATE INDEX schedules_conversation ON schedules (channel_id, conversation_id, state);
        """,
    ),
    Migration(
        "0501_schedule_pause",
        """
        ALTER TABLE schedules DROP CONSTRAINT schedules_state_check;
        ALTER TABLE schedules ADD CONSTRAINT schedules_state_check
            CHECK (state IN ('active', 'paused', 'done', 'cancelled'));
        ALTER TABLE schedules ADD COLUMN last_result TEXT;
        ALTER TABLE schedules ADD COLUMN last_finished TIMESTAMPTZ;
        """,
    ),
    Migration(
        "0600_tool_approvals",
        """
        CREATE TABLE tool_approvals (
            id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            at             TIMESTAMPTZ NOT NULL,
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
    Migration(
        "0601_session_approvals",
        """
        CREATE TABLE session_approvals (
            session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
            tool        TEXT NOT NULL,
            approved_at TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (session_id, tool)
        );
        """,
    ),
    Migration(
        "0400_media",
        """
        CREATE TABLE media (
            hash       TEXT PRIMARY KEY,
            media_type TEXT NOT NULL,
            size       BIGINT NOT NULL CHECK (size >= 0),
            data       BYTEA NOT NULL,
            created_at TIMESTAMPTZ NOT NULL
        );
        CREATE TABLE media_origins (
            origin     TEXT PRIMARY KEY,
            hash       TEXT NOT NULL REFERENCES media (hash) ON DELETE CASCADE,
            kind       TEXT NOT NULL CHECK (kind IN ('image', 'pdf', 'text')),
            name       TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX media_origins_hash ON media_origins (hash);
        """,
    ),
    *PG_MEMORY_MIGRATIONS,
    *PG_HOOK_MIGRATIONS,
    *PG_LINK_MIGRATIONS,
    *PG_VOICE_MIGRATIONS,
    *PG_API_KEY_MIGRATIONS,
    *PG_RUN_COST_MIGRATIONS,
    BREAKDOWN_PG_MIGRATION,
    Migration(
        "0511_outbox_voice",
        """
        ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
        ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check
            CHECK (kind IN ('answer', 'notice', 'voice'));
        """,
    ),
    *PG_API_CONVERSATION_MIGRATIONS,
]

# The replicas' shared tables (inbox, leases, live replicas) come last, numbered apart.
PG_MIGRATIONS += CLUSTER_MIGRATIONS
