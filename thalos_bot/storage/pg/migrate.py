"""Ordered, named migrations on PostgreSQL, applied under an advisory lock.

The rules are SQLite's (:mod:`thalos_bot.storage.migrations`): append, never edit or
reorder; each migration runs in its own transaction with its row in
``schema_migrations``; a database that records a migration this code does not know was
written by a newer version and is refused. Here one session-level advisory lock is held
while they run, so replicas that start together wait for each other and apply each
migration once.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
import structlog

from thalos_bot.storage.migrations import Migration, MigrationError, SchemaTooNewError
from thalos_bot.storage.pg.database import PgDatabase, fetch_all

log = structlog.get_logger(__name__)

MIGRATION_LOCK = 0x7468616C6F73  # "thalos": the advisory lock key migrations hold

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    position   BIGINT GENERATED ALWAYS AS IDENTITY,
    name       TEXT PRIMARY KEY NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)
"""


async def applied_migrations(db: PgDatabase) -> list[str]:
    """The names ``schema_migrations`` records, in the order they were applied."""
    async with db.read() as conn:
        exists = await fetch_all(conn, "SELECT to_regclass('schema_migrations') AS t")
        if exists[0]["t"] is None:
            return []
        rows = await fetch_all(conn, "SELECT name FROM schema_migrations ORDER BY position")
    return [str(r["name"]) for r in rows]


async def migrate(db: PgDatabase, migrations: Sequence[Migration]) -> list[str]:
    """Apply the pending migrations in order; return the names applied. Raises
    :class:`SchemaTooNewError` before changing anything when the database records an
    unknown migration, and :class:`MigrationError` when one fails."""
    names = [m.name for m in migrations]
    if len(set(names)) != len(names):
        raise ValueError("migration names must be unique")
    applied: list[str] = []
    async with db.connection() as conn:
        await conn.set_autocommit(True)
        try:
            await conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
            try:
                await conn.execute(_CREATE_TABLE)
                cursor = await conn.execute("SELECT name FROM schema_migrations")
                done = {str(r["name"]) for r in await cursor.fetchall()}
                unknown = sorted(done - set(names))
                if unknown:
                    raise SchemaTooNewError(db.location, unknown)
                for migration in migrations:
                    if migration.name in done:
                        continue
                    try:
                        async with conn.transaction():
                            await conn.execute(migration.sql)
                            await conn.execute(
                                "INSERT INTO schema_migrations (name) VALUES (%s)",
                                (migration.name,),
                            )
                    except psycopg.Error as exc:
                        reason = str(exc).strip().splitlines()[0]
                        raise MigrationError(db.location, migration.name, reason) from exc
                    log.info("migration-applied", path=db.location, migration=migration.name)
                    applied.append(migration.name)
            finally:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
        finally:
            await conn.set_autocommit(False)
    return applied
