"""The skills tables: one row per skill name, and an FTS5 index over it.

The index is an external-content FTS5 table kept in step by triggers, so no write path
can forget it. Inactive skills stay in both (searches join on ``active = 1``).
``folder`` is the real path of a skill folder (its resources), NULL for a single file.

``skill_pins`` holds what the operator accepted of each skill (the digest of all its
files, and their text for a review's diff); ``skill_holds`` what the last sync found
and did not load (new, changed, flagged or refused), for ``status`` and ``doctor``. A
database from before pinning gets a ``legacy:`` pin per active skill (the digest of its
``SKILL.md``): the next sync pins the whole folder if that file is unchanged. These
tables are a replica's own, like the skills mirror: PostgreSQL has none of them.
"""

from __future__ import annotations

from thalos_bot.storage.migrations import Migration

SKILLS_MIGRATIONS: list[Migration] = [
    Migration(
        "0200_skills",
        """
        CREATE TABLE skills (
            id            INTEGER PRIMARY KEY,
            name          TEXT NOT NULL UNIQUE,
            description   TEXT NOT NULL,
            body          TEXT NOT NULL,
            tags          TEXT NOT NULL DEFAULT '[]',
            license       TEXT,
            compatibility TEXT,
            metadata      TEXT NOT NULL DEFAULT '{}',
            allowed_tools TEXT NOT NULL DEFAULT '[]',
            source        TEXT NOT NULL,
            sha256        TEXT NOT NULL,
            active        INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
            created_at    TEXT NOT NULL,
            updated_at    TEXT NOT NULL
        );
        CREATE INDEX skills_active_name ON skills (active, name);
        """,
    ),
    Migration(
        "0201_skills_fts",
        """
        CREATE VIRTUAL TABLE skills_fts USING fts5(
            name, description, tags, body,
            content = 'skills', content_rowid = 'id',
            tokenize = 'unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER skills_fts_after_insert AFTER INSERT ON skills BEGIN
            INSERT INTO skills_fts (rowid, name, description, tags, body)
            VALUES (new.id, new.name, new.description, new.tags, new.body);
        END;
        CREATE TRIGGER skills_fts_after_delete AFTER DELETE ON skills BEGIN
            INSERT INTO skills_fts (skills_fts, rowid, name, description, tags, body)
            VALUES ('delete', old.id, old.name, old.description, old.tags, old.body);
        END;
        CREATE TRIGGER skills_fts_after_update AFTER UPDATE OF name, description, tags, body
        ON skills BEGIN
            INSERT INTO skills_fts (skills_fts, rowid, name, description, tags, body)
            VALUES ('delete', old.id, old.name, old.description, old.tags, old.body);
            INSERT INTO skills_fts (rowid, name, description, tags, body)
            VALUES (new.id, new.name, new.description, new.tags, new.body);
        END;
        """,
    ),
    Migration(
        "0202_skills_folder",
        """
        ALTER TABLE skills ADD COLUMN folder TEXT;
        """,
    ),
    Migration(
        "0203_skill_pins",
        """
        CREATE TABLE skill_pins (
            name        TEXT PRIMARY KEY NOT NULL,
            digest      TEXT NOT NULL,
            files       TEXT NOT NULL DEFAULT '[]',
            accepted_at TEXT NOT NULL,
            accepted_by TEXT NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO skill_pins (name, digest, files, accepted_at, accepted_by)
            SELECT name, 'legacy:' || sha256, '[]', updated_at, 'upgrade'
            FROM skills WHERE active = 1;
        CREATE TABLE skill_holds (
            name    TEXT PRIMARY KEY NOT NULL,
            reason  TEXT NOT NULL CHECK (reason IN ('new', 'changed', 'flagged', 'refused')),
            digest  TEXT NOT NULL,
            source  TEXT NOT NULL,
            details TEXT NOT NULL DEFAULT '[]',
            seen_at TEXT NOT NULL
        ) WITHOUT ROWID;
        """,
    ),
]
