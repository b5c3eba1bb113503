"""Copy an existing SQLite state into a PostgreSQL store (``thalos-bot db copy``).

Every table the PostgreSQL schema has is copied from the SQLite table of the same name,
column by column as PostgreSQL names them: ISO times become ``timestamptz``, 0/1 become
booleans, blobs ``bytea``; generated columns (memory's ``tsvector``) are computed by
the server, and identity columns keep their values, their sequences then moved past
them. All of it happens in one transaction: the copy lands whole or not at all. The
target must hold no rows yet (a second copy would mix two histories); what is only a
replica's own (the skills mirror, task progress) stays in SQLite, and so do the SQLite
index tables (FTS5 shards), which PostgreSQL replaces with its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog

from thalos_bot.storage.database import Database, decode_time, fetch_all
from thalos_bot.storage.pg.database import Connection, PgDatabase
from thalos_bot.storage.pg.database import fetch_all as pg_fetch_all
from thalos_bot.storage.pg.database import fetch_one as pg_fetch_one

log = structlog.get_logger(__name__)

BATCH = 500
SKIPPED = frozenset({"schema_migrations", "memory_generation"})
"""Tables of the PostgreSQL schema that are not state to copy."""


class CopyError(Exception):
    """The copy cannot start, for the reason given (nothing was written)."""


@dataclass(frozen=True, slots=True)
class CopiedTable:
    name: str
    rows: int


@dataclass(frozen=True, slots=True)
class CopyReport:
    tables: tuple[CopiedTable, ...]

    @property
    def rows(self) -> int:
        return sum(t.rows for t in self.tables)


@dataclass(frozen=True, slots=True)
class _Column:
    name: str
    kind: str
    """PostgreSQL's ``data_type``."""
    identity: bool


Convert = Callable[[Any], Any]


def _converter(kind: str) -> Convert:
    if kind.startswith("timestamp"):
        return lambda v: None if v is None else _time(v)
    if kind == "boolean":
        return lambda v: None if v is None else bool(v)
    if kind == "bytea":
        return lambda v: None if v is None else bytes(v)
    return lambda v: v


def _time(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    return decode_time(str(value))


async def _tables(conn: Connection) -> list[str]:
    """The schema's tables, parents before children (foreign keys first)."""
    rows = await pg_fetch_all(
        conn,
        "SELECT c.relname AS name,"
        " array_remove(array_agg(DISTINCT p.relname), NULL) AS parents"
        " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " LEFT JOIN pg_constraint k ON k.conrelid = c.oid AND k.contype = 'f'"
        " LEFT JOIN pg_class p ON p.oid = k.confrelid AND p.oid <> c.oid"
        " WHERE c.relkind = 'r' AND n.nspname = current_schema()"
        " GROUP BY c.relname ORDER BY c.relname",
    )
    parents = {str(r["name"]): set(r["parents"]) for r in rows}
    ordered: list[str] = []
    while parents:
        ready = sorted(name for name, deps in parents.items() if not deps - set(ordered))
        if not ready:  # a cycle: leave the rest in name order
            ready = sorted(parents)
        for name in ready:
            ordered.append(name)
            del parents[name]
    return [t for t in ordered if t not in SKIPPED]


async def _columns(conn: Connection, table: str) -> list[_Column]:
    rows = await pg_fetch_all(
        conn,
        "SELECT column_name, data_type, is_identity, is_generated FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND table_name = %s ORDER BY ordinal_position",
        (table,),
    )
    return [
        _Column(str(r["column_name"]), str(r["data_type"]), r["is_identity"] == "YES")
        for r in rows
        if r["is_generated"] != "ALWAYS"
    ]


async def _sqlite_columns(db: Database, table: str) -> set[str] | None:
    async with db.read() as conn:
        rows = await fetch_all(conn, f"PRAGMA table_info({table})")
    return {str(r["name"]) for r in rows} or None


async def copy_state(
    source: Database,
    target: PgDatabase,
    *,
    on_table: Callable[[CopiedTable], None] | None = None,
) -> CopyReport:
    """Copy ``source`` into ``target`` (already migrated). Raises :class:`CopyError`
    before writing anything when ``target`` already holds state."""
    copied: list[CopiedTable] = []
    async with target.transaction() as conn:
        # Between its statements the copy reads the SQLite file: not a stalled client.
        await conn.execute("SET LOCAL idle_in_transaction_session_timeout = 0")
        tables = await _tables(conn)
        for table in tables:
            row = await pg_fetch_one(conn, f"SELECT EXISTS (SELECT 1 FROM {table}) AS used")  # noqa: S608
            if row is not None and row["used"]:
                raise CopyError(
                    f"{target.location} already holds state (table {table} has rows); "
                    "copy into an empty database"
                )
        for table in tables:
            done = await _copy_table(source, conn, table)
            if done is None:
                continue
            copied.append(done)
            if on_table is not None:
                on_table(done)
        await conn.execute("UPDATE memory_generation SET value = value + 1")
    report = CopyReport(tuple(copied))
    log.info("db-copied", target=target.location, tables=len(copied), rows=report.rows)
    return report


async def _copy_table(source: Database, conn: Connection, table: str) -> CopiedTable | None:
    """One table, in batches; ``None`` when SQLite has no such table."""
    have = await _sqlite_columns(source, table)
    if have is None:
        return None
    columns = [c for c in await _columns(conn, table) if c.name in have]
    names = ", ".join(c.name for c in columns)
    marks = ", ".join("%s" for _ in columns)
    converters = [_converter(c.kind) for c in columns]
    overriding = " OVERRIDING SYSTEM VALUE" if any(c.identity for c in columns) else ""
    insert = f"INSERT INTO {table} ({names}){overriding} VALUES ({marks})"  # noqa: S608
    count = 0
    async with source.read() as sqlite:  # one snapshot of the file, read in batches
        reading = await sqlite.execute(f"SELECT {names} FROM {table}")  # noqa: S608
        while rows := list(await reading.fetchmany(BATCH)):
            values = [_row(row, converters) for row in rows]
            async with conn.cursor() as cursor:
                await cursor.executemany(insert, values)
            count += len(rows)
    for column in columns:
        if column.identity:
            await conn.execute(
                f"SELECT setval(pg_get_serial_sequence(%s, %s),"  # noqa: S608
                f" GREATEST((SELECT max({column.name}) FROM {table}), 1))",
                (table, column.name),
            )
    return CopiedTable(table, count)


def _row(row: Sequence[Any], converters: Sequence[Convert]) -> list[Any]:
    return [convert(row[i]) for i, convert in enumerate(converters)]
