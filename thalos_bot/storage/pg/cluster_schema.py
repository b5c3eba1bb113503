"""The tables replicas share, appended to the PostgreSQL migrations.

Every time that decides who holds what is the server's ``now()``, never a replica's
clock: two machines whose clocks disagree still agree on when a lease ran out.
"""

from __future__ import annotations

from thalos_bot.storage.migrations import Migration

CLUSTER_MIGRATIONS: list[Migration] = [
    Migration(
        "0100_webhook_inbox",
        """
        CREATE TABLE webhook_inbox (
            bot          BIGINT NOT NULL,
            update_id    BIGINT NOT NULL,
            lane         TEXT NOT NULL,
            payload      JSONB NOT NULL,
            received_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
            taken_at     TIMESTAMPTZ,
            taken_token  BIGINT,
            PRIMARY KEY (bot, update_id)
        );
        CREATE INDEX webhook_inbox_waiting ON webhook_inbox (bot, lane, update_id)
            WHERE taken_at IS NULL;
        CREATE INDEX webhook_inbox_received ON webhook_inbox (received_at);
        """,
    ),
    Migration(
        "0101_conversation_leases",
        """
        CREATE TABLE conversation_leases (
            channel_id   TEXT NOT NULL,
            lane         TEXT NOT NULL,
            holder       TEXT,
            token        BIGINT NOT NULL DEFAULT 0,
            expires_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
            turn_update  BIGINT,
            PRIMARY KEY (channel_id, lane)
        );
        CREATE INDEX conversation_leases_holder ON conversation_leases (holder);
        """,
    ),
    Migration(
        "0102_replicas",
        """
        CREATE TABLE replicas (
            id          TEXT PRIMARY KEY,
            started_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
            seen_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
            intake      TEXT NOT NULL
        );
        """,
    ),
    Migration(
        "0103_outbox_claims",
        """
        ALTER TABLE outbox
            ADD COLUMN claimed_by    TEXT,
            ADD COLUMN claim_token   BIGINT NOT NULL DEFAULT 0,
            ADD COLUMN claimed_until TIMESTAMPTZ;
        """,
    ),
    Migration(
        "0104_chat_holds",
        """
        CREATE TABLE chat_holds (
            bot          BIGINT NOT NULL,
            chat         BIGINT NOT NULL,
            retry_until  TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (bot, chat)
        );
        """,
    ),
    Migration(
        "0105_connection_leases",
        """
        CREATE TABLE connection_leases (
            channel_id     TEXT PRIMARY KEY,
            holder         TEXT,
            token          BIGINT NOT NULL DEFAULT 0,
            expires_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
            since          TIMESTAMPTZ,
            taken_over_at  TIMESTAMPTZ
        );
        CREATE TABLE connection_seen (
            channel_id       TEXT NOT NULL,
            conversation_id  TEXT NOT NULL,
            ref              TEXT NOT NULL,
            seen_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (channel_id, conversation_id, ref)
        );
        CREATE INDEX connection_seen_at ON connection_seen (seen_at);
        """,
    ),
    Migration(
        "0106_connection_state",
        """
        ALTER TABLE connection_leases ADD COLUMN state JSONB;
        """,
    ),
    Migration(
        "0107_connection_inbox",
        """
        ALTER TABLE connection_seen
            ADD COLUMN seq          BIGSERIAL,
            ADD COLUMN payload      JSONB,
            ADD COLUMN taken_token  BIGINT,
            ADD COLUMN done_at      TIMESTAMPTZ;
        CREATE INDEX connection_inbox_waiting ON connection_seen (channel_id, seq)
            WHERE payload IS NOT NULL;
        """,
    ),
    Migration(
        "0108_connection_holds",
        """
        CREATE TABLE connection_holds (
            channel_id    TEXT NOT NULL,
            conversation  TEXT NOT NULL,
            retry_until   TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (channel_id, conversation)
        );
        """,
    ),
    Migration(
        "0109_web_logins",
        """
        CREATE TABLE web_secret (
            name    TEXT PRIMARY KEY,
            secret  BYTEA NOT NULL
        );
        CREATE TABLE web_logouts (
            seq         BIGSERIAL PRIMARY KEY,
            principal   TEXT NOT NULL,
            nonce       TEXT NOT NULL UNIQUE,
            expires_at  DOUBLE PRECISION NOT NULL,
            written_at  TIMESTAMPTZ NOT NULL DEFAULT now()
        );
        CREATE TABLE web_pairing (
            digest      TEXT PRIMARY KEY,
            principal   TEXT NOT NULL,
            expires_at  TIMESTAMPTZ NOT NULL
        );
        """,
    ),
    Migration(
        "0110_web_events",
        """
        CREATE TABLE web_streams (
            conversation  TEXT PRIMARY KEY,
            last_seq      BIGINT NOT NULL
        );
        CREATE TABLE web_events (
            conversation  TEXT NOT NULL,
            seq           BIGINT NOT NULL,
            kind          TEXT NOT NULL,
            turn          TEXT,
            data          JSONB NOT NULL,
            PRIMARY KEY (conversation, seq)
        );
        """,
    ),
    Migration(
        "0111_web_answers",
        """
        CREATE TABLE web_answers (
            question      TEXT PRIMARY KEY,
            conversation  TEXT NOT NULL,
            verdict       TEXT NOT NULL,
            decided_by    TEXT NOT NULL,
            answered_at   TIMESTAMPTZ NOT NULL DEFAULT now()
        );
        """,
    ),
    Migration(
        "0112_web_media",
        """
        CREATE TABLE web_media (
            key           TEXT PRIMARY KEY,
            conversation  TEXT NOT NULL,
            media_type    TEXT NOT NULL,
            data          BYTEA NOT NULL,
            made_at       TIMESTAMPTZ NOT NULL DEFAULT now()
        );
        CREATE INDEX web_media_made ON web_media (conversation, made_at);
        """,
    ),
    Migration(
        "0113_web_finals",
        """
        CREATE TABLE web_finals (
            conversation  TEXT NOT NULL,
            key           TEXT NOT NULL,
            seq           BIGINT NOT NULL,
            written_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (conversation, key)
        );
        CREATE INDEX web_finals_written ON web_finals (written_at);
        """,
    ),
    Migration(
        "0114_rate_buckets",
        """
        CREATE TABLE rate_buckets (
            scope    TEXT NOT NULL,
            key      TEXT NOT NULL,
            tokens   DOUBLE PRECISION NOT NULL,
            granted  INTEGER NOT NULL DEFAULT 0,
            at       TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (scope, key)
        );
        """,
    ),
    Migration(
        "0115_connection_rows",
        """
        CREATE TABLE connection_rows (
            channel_id  TEXT NOT NULL,
            kind        TEXT NOT NULL,
            grp         TEXT NOT NULL,
            name        TEXT NOT NULL,
            value       BYTEA NOT NULL,
            PRIMARY KEY (channel_id, kind, grp, name)
        );
        """,
    ),
    Migration(
        "0116_connection_seen_owner_only",
        """
        ALTER TABLE connection_seen ADD COLUMN owner_only BOOLEAN NOT NULL DEFAULT false;
        """,
    ),
    Migration(
        "0117_approval_presses",
        """
        CREATE TABLE approval_presses (
            id          BIGSERIAL PRIMARY KEY,
            channel_id  TEXT NOT NULL,
            press       TEXT NOT NULL,
            pressed_at  TIMESTAMPTZ NOT NULL DEFAULT now()
        );
        CREATE INDEX approval_presses_pressed ON approval_presses (channel_id, pressed_at);
        """,
    ),
]
