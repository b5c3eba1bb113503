"""The media tables: bytes once per content hash, and origin keys that point at them."""

from __future__ import annotations

from thalos_bot.storage.migrations import Migration

MEDIA_MIGRATIONS: list[Migration] = [
    Migration(
        "0400_media",
        """
        CREATE TABLE media (
            hash       TEXT PRIMARY KEY NOT NULL,
            media_type TEXT NOT NULL,
            size       INTEGER NOT NULL CHECK (size >= 0),
            data       BLOB NOT NULL,
            created_at TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE media_origins (
            origin     TEXT PRIMARY KEY NOT NULL,
            hash       TEXT NOT NULL REFERENCES media (hash) ON DELETE CASCADE,
            kind       TEXT NOT NULL CHECK (kind IN ('image', 'pdf', 'text')),
            name       TEXT NOT NULL DEFAULT ''
        ) WITHOUT ROWID;
        CREATE INDEX media_origins_hash ON media_origins (hash);
        """,
    ),
]
