"""The embedded SQLite database: one aiosqlite connection shared by the daemon.

Coroutines interleave on that one connection, so every use goes through an
:class:`anyio.Lock`: :meth:`Database.transaction` for writes (``BEGIN IMMEDIATE`` …
``COMMIT``, rolled back on any exception, cancellation included) and
:meth:`Database.read` for reads, which therefore never see another coroutine's
unfinished transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import aiosqlite
import anyio
import structlog

from thalos_bot.storage.private import ensure_private_file

if TYPE_CHECKING:
    from thalos_bot.storage.migrations import Migration

log = structlog.get_logger(__name__)

MEMORY = ":memory:"
DEFAULT_BUSY_TIMEOUT_MS = 5000


def _empty_file(path: Path) -> bool:
    return path.is_file() and path.stat().st_size == 0


class DatabaseError(Exception):
    """The database at ``path`` cannot be opened or used, for ``reason``."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"database {path}: {reason}")


def as_utc(at: datetime) -> datetime:
    """``at`` converted to UTC; naive datetimes are refused."""
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError("timestamps must be timezone-aware")
    return at.astimezone(UTC)


def encode_time(at: datetime) -> str:
    """ISO-8601 text in UTC with microseconds; sorts in time order."""
    return as_utc(at).isoformat(timespec="microseconds")


def decode_time(raw: str) -> datetime:
    """The inverse of :func:`encode_time`: an aware UTC datetime."""
    return as_utc(datetime.fromisoformat(raw))


async def fetch_one(
    conn: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()
) -> sqlite3.Row | None:
    """The first row of a query, or ``None``; the statement is run to completion."""
    rows = await fetch_all(conn, sql, params)
    return rows[0] if rows else None


async def fetch_all(
    conn: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()
) -> list[sqlite3.Row]:
    """Every row of a query."""
    rows: Iterable[sqlite3.Row] = await conn.execute_fetchall(sql, params)
    return list(rows)


class Database:
    """The shared connection. Create it with :meth:`open` or :meth:`open_memory`."""

    def __init__(self, conn: aiosqlite.Connection, location: str) -> None:
        self._conn: aiosqlite.Connection | None = conn
        self._lock = anyio.Lock()
        self.location = location
        self.path: Path | None = None if location == MEMORY else Path(location)
        self.journal_mode = ""
        self.has_fts5 = False
        self.applied_on_open: tuple[str, ...] = ()

    @classmethod
    async def open(
        cls,
        path: Path | str,
        *,
        migrations: Sequence[Migration] | None = None,
        busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
        apply: bool = True,
    ) -> Database:
        """Open (creating it and its directory if needed), configure and migrate.

        ``migrations`` defaults to :data:`thalos_bot.storage.migrations.MIGRATIONS`;
        ``apply=False`` leaves the schema to the daemon (a command beside it that knows
        only some of the tables). Raises :class:`DatabaseError` when the file cannot be
        used.
        """
        location = str(path)
        if location != MEMORY and _empty_file(Path(location)):
            # SQLite would take an empty file as a new database and start afresh: a
            # truncated or wrongly restored file would look like a bot that forgot it all.
            raise DatabaseError(
                location,
                "the file is empty (0 bytes), so it holds no thalos-bot database; restore "
                "the database from a backup, or delete the empty file to start a new one",
            )
        if location != MEMORY:
            try:
                ensure_private_file(Path(location))
            except OSError as exc:
                raise DatabaseError(
                    location, f"cannot create its directory ({exc.strerror or exc})"
                ) from exc
        pending = aiosqlite.connect(location, isolation_level=None)
        try:
            conn = await pending
        except sqlite3.Error as exc:
            # aiosqlite stops its worker thread on a failed connect without waiting for
            # it; were the event loop closed first, that thread would print a traceback.
            await anyio.to_thread.run_sync(pending._thread.join)  # noqa: SLF001
            raise DatabaseError(location, f"cannot open it ({exc})") from exc

        db = cls(conn, location)
        try:
            await db._configure(conn, busy_timeout_ms)
            from thalos_bot.storage.migrations import MIGRATIONS, migrate

            if apply:
                db.applied_on_open = tuple(
                    await migrate(db, MIGRATIONS if migrations is None else migrations)
                )
        except sqlite3.Error as exc:
            await db.aclose()
            raise DatabaseError(location, _describe(exc)) from exc
        except BaseException:
            await db.aclose()
            raise
        log.info(
            "database-opened",
            path=location,
            journal_mode=db.journal_mode,
            fts5=db.has_fts5,
            migrations_applied=len(db.applied_on_open),
        )
        return db

    @classmethod
    async def open_memory(cls, *, migrations: Sequence[Migration] | None = None) -> Database:
        """A private in-memory database (for tests); gone once closed."""
        return await cls.open(MEMORY, migrations=migrations)

    async def _configure(self, conn: aiosqlite.Connection, busy_timeout_ms: int) -> None:
        conn.row_factory = sqlite3.Row
        await conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        # The first statement that reads the file header: a non-database fails here.
        row = await fetch_one(conn, "PRAGMA journal_mode = WAL")
        self.journal_mode = str(row[0]).lower() if row is not None else ""
        if self.path is not None and self.journal_mode != "wal":
            log.warning("database-not-wal", path=self.location, journal_mode=self.journal_mode)
        await conn.execute("PRAGMA synchronous = NORMAL")
        await conn.execute("PRAGMA foreign_keys = ON")
        # What a user asks to forget (a memory, a span of history) must not live on as
        # a stale copy: zero cells and pages as they are freed, so a merge or page split
        # never leaves old text in a free page or the slack of a reused one.
        await conn.execute("PRAGMA secure_delete = ON")
        self.has_fts5 = await _probe_fts5(conn)

    @property
    def closed(self) -> bool:
        return self._conn is None

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT`` under the lock; rolled back on any exception."""
        async with self._locked("BEGIN IMMEDIATE") as conn:
            yield conn

    @asynccontextmanager
    async def read(self) -> AsyncIterator[aiosqlite.Connection]:
        """A consistent snapshot under the lock (a deferred transaction)."""
        async with self._locked("BEGIN DEFERRED") as conn:
            yield conn

    @asynccontextmanager
    async def _locked(self, begin: str) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            conn = self._conn
            if conn is None:
                raise DatabaseError(self.location, "it is closed")
            try:
                await conn.execute(begin)
                yield conn
            except BaseException:
                # Shielded: a cancelled transaction must still end here.
                with anyio.CancelScope(shield=True):
                    await conn.rollback()
                raise
            with anyio.CancelScope(shield=True):
                try:
                    await conn.commit()
                except BaseException:
                    await conn.rollback()
                    raise

    async def aclose(self) -> None:
        """Close the connection once any running transaction ends. Idempotent."""
        with anyio.CancelScope(shield=True):
            async with self._lock:
                conn, self._conn = self._conn, None
                if conn is None:
                    return
                await conn.close()
        log.info("database-closed", path=self.location)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


async def _probe_fts5(conn: aiosqlite.Connection) -> bool:
    try:
        await conn.execute("CREATE VIRTUAL TABLE temp.thalos_fts5_probe USING fts5(body)")
    except sqlite3.OperationalError:
        return False
    await conn.execute("DROP TABLE temp.thalos_fts5_probe")
    return True


def _describe(exc: sqlite3.Error) -> str:
    if "not a database" in str(exc):
        return "the file is not a SQLite database"
    return f"cannot use it ({exc})"
