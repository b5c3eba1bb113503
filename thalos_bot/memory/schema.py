"""The memory tables: records, an FTS5 index kept in step by triggers (with an
``fts5vocab`` view of its document counts), and one vector per record
(``memory_vectors``, see :mod:`thalos_bot.memory.vectors`) with the records still
waiting for theirs (``memory_index_pending``); both cascade on delete.

``memories_fts`` is an *external-content* FTS5 table over ``memories``: the text is
stored once (in ``memories``) and the index holds only terms and positions. The
triggers feed it the exact old values on update and delete, which external content
requires; an update that touches neither ``text`` nor ``tags`` leaves it alone.
Archived rows stay indexed (a query filters them out); a hard delete removes the row
and, through the trigger, its index entries (see :meth:`MemoryStore.delete` for what
else it does so no copy of the bytes survives).
"""

from __future__ import annotations

from collections.abc import Sequence

from thalos_bot.storage.migrations import MIGRATIONS, Migration

MEMORY_MIGRATIONS: list[Migration] = [
    Migration(
        "0100_memory_records",
        """
        CREATE TABLE memories (
            seq              INTEGER PRIMARY KEY,
            id               TEXT NOT NULL UNIQUE,
            owner            TEXT NOT NULL CHECK (owner <> ''),
            agent            TEXT,
            kind             TEXT NOT NULL,
            text             TEXT NOT NULL CHECK (length(text) BETWEEN 1 AND 4000),
            tags             TEXT NOT NULL DEFAULT '[]',
            importance       INTEGER NOT NULL DEFAULT 3 CHECK (importance BETWEEN 1 AND 5),
            created_at       TEXT NOT NULL,
            updated_at       TEXT NOT NULL,
            last_recalled_at TEXT,
            archived         INTEGER NOT NULL DEFAULT 0 CHECK (archived IN (0, 1))
        );
        CREATE INDEX memories_owner_listing ON memories (owner, archived, updated_at);
        """,
    ),
    Migration(
        "0101_memory_fts",
        """
        CREATE VIRTUAL TABLE memories_fts USING fts5 (
            text,
            tags,
            content = 'memories',
            content_rowid = 'seq',
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts (rowid, text, tags) VALUES (new.seq, new.text, new.tags);
        END;
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts (memories_fts, rowid, text, tags)
                VALUES ('delete', old.seq, old.text, old.tags);
        END;
        CREATE TRIGGER memories_fts_update AFTER UPDATE OF text, tags ON memories BEGIN
            INSERT INTO memories_fts (memories_fts, rowid, text, tags)
                VALUES ('delete', old.seq, old.text, old.tags);
            INSERT INTO memories_fts (rowid, text, tags) VALUES (new.seq, new.text, new.tags);
        END;
        """,
    ),
    Migration(
        "0300_memory_vectors",
        """
        CREATE TABLE memory_vectors (
            seq    INTEGER PRIMARY KEY NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
            model  TEXT NOT NULL,
            vector BLOB NOT NULL
        );
        CREATE TABLE memory_index_pending (
            seq INTEGER PRIMARY KEY NOT NULL REFERENCES memories (seq) ON DELETE CASCADE
        );
        INSERT INTO memory_index_pending (seq) SELECT seq FROM memories;
        """,
    ),
    Migration(
        "0301_memory_fts_vocab",
        """
        CREATE VIRTUAL TABLE memories_fts_vocab USING fts5vocab (memories_fts, 'row');
        """,
    ),
]
"""Append to :data:`thalos_bot.storage.migrations.MIGRATIONS` (names sort after the core
ones and leave room for them)."""


def with_memory(migrations: Sequence[Migration] = MIGRATIONS) -> list[Migration]:
    """``migrations`` followed by any memory migration they lack: right both before and
    after the memory migrations are wired into :data:`MIGRATIONS`."""
    known = {m.name for m in migrations}
    return [*migrations, *(m for m in MEMORY_MIGRATIONS if m.name not in known)]
