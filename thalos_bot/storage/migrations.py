"""Ordered, named schema migrations and the table that records the applied ones.

To change the schema, append a :class:`Migration` to :data:`MIGRATIONS`; never edit
or reorder one that has shipped. Each migration runs in its own transaction together
with its row in ``schema_migrations``. A database that records a migration this code
does not know was written by a newer version and is refused.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import structlog

from thalos_bot.storage.database import (
    Database,
    DatabaseError,
    decode_time,
    encode_time,
    fetch_all,
    fetch_one,
)

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Migration:
    name: str
    sql: str


MIGRATIONS: list[Migration] = [
    Migration(
        "0001_sessions",
        """
        CREATE TABLE sessions (
            id                 TEXT PRIMARY KEY NOT NULL,
            agent_id           TEXT NOT NULL,
            owner              TEXT NOT NULL,
            status             TEXT NOT NULL CHECK (status IN ('open', 'closed')),
            created_at         TEXT NOT NULL,
            updated_at         TEXT NOT NULL,
            turns              INTEGER NOT NULL DEFAULT 0,
            input_tokens       INTEGER NOT NULL DEFAULT 0,
            output_tokens      INTEGER NOT NULL DEFAULT 0,
            cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
            cache_write_tokens INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX sessions_owner_updated ON sessions (owner, updated_at);
        """,
    ),
    Migration(
        "0002_session_messages",
        """
        CREATE TABLE session_messages (
            session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
            seq        INTEGER NOT NULL CHECK (seq >= 0),
            role       TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
            content    TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        ) WITHOUT ROWID;
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
            last_activity   TEXT NOT NULL,
            PRIMARY KEY (channel_id, conversation_id)
        ) WITHOUT ROWID;
        CREATE INDEX conversation_bindings_session ON conversation_bindings (session_id);
        """,
    ),
    Migration(
        "0004_session_context",
        """
        CREATE TABLE session_context (
            session_id       TEXT PRIMARY KEY NOT NULL
                             REFERENCES sessions (id) ON DELETE CASCADE,
            summary          TEXT NOT NULL DEFAULT '',
            summary_until    INTEGER NOT NULL DEFAULT 0 CHECK (summary_until >= 0),
            input_tokens     INTEGER NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
            estimated_tokens INTEGER NOT NULL DEFAULT 0 CHECK (estimated_tokens >= 0)
        ) WITHOUT ROWID;
        """,
    ),
]

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    name       TEXT PRIMARY KEY NOT NULL,
    applied_at TEXT NOT NULL
)
"""


class SchemaTooNewError(DatabaseError):
    """The database records migrations this code does not know."""

    def __init__(self, path: str, unknown: Sequence[str]) -> None:
        self.unknown = tuple(unknown)
        super().__init__(
            path,
            "it was written by a newer thalos-bot (unknown migrations: "
            + ", ".join(self.unknown)
            + "); upgrade thalos-bot to use it",
        )


class MigrationError(DatabaseError):
    """A migration failed; it was rolled back and the later ones were not run."""

    def __init__(self, path: str, migration: str, reason: str) -> None:
        self.migration = migration
        super().__init__(path, f"migration {migration} failed ({reason})")


@dataclass(frozen=True, slots=True)
class AppliedMigration:
    name: str
    applied_at: datetime


@dataclass(frozen=True, slots=True)
class SchemaStatus:
    """What ``schema_migrations`` says, compared with the migrations this code knows."""

    applied: tuple[AppliedMigration, ...]
    pending: tuple[Migration, ...]
    unknown: tuple[str, ...]

    @property
    def current(self) -> str | None:
        """The name of the last applied migration, or ``None`` for an empty database."""
        return self.applied[-1].name if self.applied else None

    @property
    def up_to_date(self) -> bool:
        return not self.pending and not self.unknown


def split_statements(sql: str) -> list[str]:
    """Split a script into complete statements (semicolons in strings, comments and
    trigger bodies are kept in place)."""
    statements: list[str] = []
    buffer = ""
    pieces = sql.split(";")
    for piece in pieces[:-1]:
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            if buffer.strip(" \t\r\n;"):
                statements.append(buffer.strip())
            buffer = ""
    rest = (buffer + pieces[-1]).rstrip()
    if rest.strip():
        # The last statement may lack its semicolon, or end in a line comment.
        for ending in (";", "\n;"):
            if sqlite3.complete_statement(rest + ending):
                statements.append((rest + ending).strip())
                break
        else:
            raise ValueError(f"incomplete SQL statement: {rest.strip()[:60]!r}")
    return statements


def _check_names(migrations: Sequence[Migration]) -> None:
    names = [m.name for m in migrations]
    if len(set(names)) != len(names):
        raise ValueError("migration names must be unique")


async def schema_status(db: Database, migrations: Sequence[Migration] = MIGRATIONS) -> SchemaStatus:
    """Applied, pending and unknown migrations, in order. Changes nothing."""
    async with db.read() as conn:
        exists = await fetch_one(
            conn,
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
        )
        rows = []
        if exists is not None:
            rows = await fetch_all(
                conn, "SELECT name, applied_at FROM schema_migrations ORDER BY rowid"
            )
    applied = tuple(AppliedMigration(r["name"], decode_time(r["applied_at"])) for r in rows)
    known = {m.name for m in migrations}
    done = {a.name for a in applied}
    return SchemaStatus(
        applied=applied,
        pending=tuple(m for m in migrations if m.name not in done),
        unknown=tuple(a.name for a in applied if a.name not in known),
    )


async def pending_migrations(
    db: Database, migrations: Sequence[Migration] = MIGRATIONS
) -> list[Migration]:
    """The migrations not yet applied, in the order they would run."""
    return list((await schema_status(db, migrations)).pending)


async def migrate(db: Database, migrations: Sequence[Migration] = MIGRATIONS) -> list[str]:
    """Apply the pending migrations in order; return the names applied.

    Raises :class:`SchemaTooNewError` before changing anything when the database
    records an unknown migration, and :class:`MigrationError` when one fails.
    """
    _check_names(migrations)
    async with db.transaction() as conn:
        await conn.execute(_CREATE_TABLE)
    status = await schema_status(db, migrations)
    if status.unknown:
        raise SchemaTooNewError(db.location, status.unknown)
    applied: list[str] = []
    for migration in status.pending:
        statements = split_statements(migration.sql)
        try:
            async with db.transaction() as conn:
                # Another process may have applied it since we looked.
                done = await fetch_one(
                    conn, "SELECT 1 FROM schema_migrations WHERE name = ?", (migration.name,)
                )
                if done is not None:
                    continue
                for statement in statements:
                    await conn.execute(statement)
                await conn.execute(
                    "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                    (migration.name, encode_time(datetime.now(UTC))),
                )
        except sqlite3.Error as exc:
            raise MigrationError(db.location, migration.name, str(exc)) from exc
        log.info("migration-applied", path=db.location, migration=migration.name)
        applied.append(migration.name)
    return applied
