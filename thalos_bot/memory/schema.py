"""The memory tables: records, a word index of FTS5 shards kept in step by triggers
(each with an ``fts5vocab`` view of its document counts), and one vector per record
(``memory_vectors``, see :mod:`thalos_bot.memory.vectors`) with the records still
waiting for theirs (``memory_index_pending``); both cascade on delete.

The word index is :data:`FTS_SHARDS` *contentless* FTS5 tables, ``memories_fts_00`` …:
the text is stored once (in ``memories``) and a shard holds only terms and positions.
A record's shard follows from its ``seq`` alone (:func:`shard_of`): consecutive
blocks of :data:`FTS_BLOCK` records go to the shards in turn. The triggers feed a
shard the exact old values on update and delete, which a contentless table requires;
an update that touches neither ``text`` nor ``tags`` leaves it alone. Archived rows
stay indexed (a query filters them out); a hard delete removes the row and, through
the trigger, its index entries (see :meth:`MemoryStore.delete` for what else it does
so no copy of the bytes survives).

Why shards: forgetting must rewrite the index that held a record (FTS5 keeps a
deleted record's terms in its old segment until the segments are merged), and the
cost of that rewrite grows with the index. One index of 100k records is about 6 MB;
rewriting it took 125 ms (plus 40 ms to write the pages). A shard holds a
:data:`FTS_SHARDS`-th of it; :mod:`thalos_bot.memory.index` queries every shard in
one statement and merges by BM25. Blocks rather than ``seq`` modulo the shard count,
so a store of fewer than :data:`FTS_BLOCK` records is one index with exactly the BM25
of a single table, and no shard is ever a handful of records with noisy statistics.
The figures behind :data:`FTS_SHARDS` are in the module docstring of
:mod:`thalos_bot.memory.index`.
"""

from __future__ import annotations

from collections.abc import Sequence

from thalos_bot.storage.migrations import MIGRATIONS, Migration
from thalos_bot.storage.progress import PROGRESS_MIGRATIONS

FTS_SHARDS = 16
"""How many FTS5 tables the word index is split into (fixed by the migration that
created them; changing it needs a new migration that rebuilds them)."""
FTS_BLOCK = 512
"""Consecutive records (by ``seq``) that share a shard."""
TOKENIZE = "porter unicode61 remove_diacritics 2"


def shard_of(seq: int) -> int:
    """The shard that indexes the record ``seq``."""
    return (seq // FTS_BLOCK) % FTS_SHARDS


def shard_table(shard: int) -> str:
    return f"memories_fts_{shard:02d}"


def vocab_table(shard: int) -> str:
    return f"memories_vocab_{shard:02d}"


def _shard_sql(shard: int) -> str:
    fts, vocab = shard_table(shard), vocab_table(shard)
    mine = f"% {FTS_SHARDS} = {shard}"
    return f"""
        CREATE VIRTUAL TABLE {fts} USING fts5 (
            text, tags, content = '', tokenize = '{TOKENIZE}'
        );
        CREATE VIRTUAL TABLE {vocab} USING fts5vocab ({fts}, 'row');
        CREATE TRIGGER {fts}_insert AFTER INSERT ON memories
        WHEN new.seq / {FTS_BLOCK} {mine} BEGIN
            INSERT INTO {fts} (rowid, text, tags) VALUES (new.seq, new.text, new.tags);
        END;
        CREATE TRIGGER {fts}_delete AFTER DELETE ON memories
        WHEN old.seq / {FTS_BLOCK} {mine} BEGIN
            INSERT INTO {fts} ({fts}, rowid, text, tags)
                VALUES ('delete', old.seq, old.text, old.tags);
        END;
        CREATE TRIGGER {fts}_update AFTER UPDATE OF text, tags ON memories
        WHEN old.seq / {FTS_BLOCK} {mine} BEGIN
            INSERT INTO {fts} ({fts}, rowid, text, tags)
                VALUES ('delete', old.seq, old.text, old.tags);
            INSERT INTO {fts} (rowid, text, tags) VALUES (new.seq, new.text, new.tags);
        END;
        INSERT INTO {fts} (rowid, text, tags)
            SELECT seq, text, tags FROM memories WHERE seq / {FTS_BLOCK} {mine};
        INSERT INTO {fts} ({fts}) VALUES ('optimize');
    """  # noqa: S608 - the names and numbers of this module


def _sharding_sql() -> str:
    """From the one external-content index to the shards, rebuilt from ``memories``.
    The old index's pages are wiped as they are freed (``secure_delete``): they hold
    the terms of records that may be forgotten later, and a free page is still in the
    file. (The database turns ``secure_delete`` on when it opens; it is said here too,
    as this migration relies on it.)"""
    shards = "".join(_shard_sql(shard) for shard in range(FTS_SHARDS))
    return f"""
        PRAGMA secure_delete = ON;
        DROP TRIGGER memories_fts_insert;
        DROP TRIGGER memories_fts_delete;
        DROP TRIGGER memories_fts_update;
        DROP TABLE memories_fts_vocab;
        DROP TABLE memories_fts;
        {shards}
    """


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
    Migration("0310_memory_fts_shards", _sharding_sql()),
    *PROGRESS_MIGRATIONS,  # the reindex is its first user
]
"""Append to :data:`thalos_bot.storage.migrations.MIGRATIONS` (names sort after the core
ones and leave room for them)."""


def with_memory(migrations: Sequence[Migration] = MIGRATIONS) -> list[Migration]:
    """``migrations`` followed by any memory migration they lack: right both before and
    after the memory migrations are wired into :data:`MIGRATIONS`."""
    known = {m.name for m in migrations}
    return [*migrations, *(m for m in MEMORY_MIGRATIONS if m.name not in known)]
