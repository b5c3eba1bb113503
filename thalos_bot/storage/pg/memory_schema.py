"""The memory tables on PostgreSQL: records with a generated ``tsvector`` of their words
(GIN-indexed), one int8-coded vector per record as ``bytea``, the records waiting for
theirs, and a generation counter that every write raises.

Names mirror the SQLite migrations of :mod:`thalos_bot.memory.schema`. The word index
is PostgreSQL's own full-text search (``english`` configuration: stems as the SQLite
index's porter tokenizer does), kept in step by the generated column, so no write path
can forget it. Vectors are scanned in each replica's memory as on SQLite (pgvector is
not needed); :data:`GENERATION` tells a replica that another one wrote, so it reloads
its copy (the role ``PRAGMA data_version`` plays on SQLite).
"""

from __future__ import annotations

from thalos_bot.storage.migrations import Migration

GENERATION = "memory_generation"

PG_MEMORY_MIGRATIONS: list[Migration] = [
    Migration(
        "0100_memory_records",
        """
        CREATE TABLE memories (
            seq              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id               TEXT NOT NULL UNIQUE,
            owner            TEXT NOT NULL CHECK (owner <> ''),
            agent            TEXT,
            kind             TEXT NOT NULL,
            text             TEXT NOT NULL CHECK (char_length(text) BETWEEN 1 AND 4000),
            tags             TEXT NOT NULL DEFAULT '[]',
            importance       INTEGER NOT NULL DEFAULT 3 CHECK (importance BETWEEN 1 AND 5),
            created_at       TIMESTAMPTZ NOT NULL,
            updated_at       TIMESTAMPTZ NOT NULL,
            last_recalled_at TIMESTAMPTZ,
            archived         BOOLEAN NOT NULL DEFAULT false
        );
        CREATE INDEX memories_owner_listing ON memories (owner, archived, updated_at);
        """,
    ),
    Migration(
        "0101_memory_fts",
        """
        ALTER TABLE memories ADD COLUMN words tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector('english', text), 'A')
            || setweight(to_tsvector('english', tags), 'B')
        ) STORED;
        CREATE INDEX memories_words ON memories USING GIN (words);
        """,
    ),
    Migration(
        "0300_memory_vectors",
        """
        CREATE TABLE memory_vectors (
            seq    BIGINT PRIMARY KEY REFERENCES memories (seq) ON DELETE CASCADE,
            model  TEXT NOT NULL,
            vector BYTEA NOT NULL
        );
        CREATE TABLE memory_index_pending (
            seq BIGINT PRIMARY KEY REFERENCES memories (seq) ON DELETE CASCADE
        );
        CREATE TABLE memory_generation (
            one   BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
            value BIGINT NOT NULL
        );
        INSERT INTO memory_generation (one, value) VALUES (true, 0);
        """,
    ),
]
"""Part of :data:`thalos_bot.storage.pg.schema.PG_MIGRATIONS`."""
