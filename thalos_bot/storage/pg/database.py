"""A PostgreSQL database behind a psycopg 3 async connection pool.

Every use borrows a connection for one transaction and returns it at once
(:meth:`PgDatabase.transaction`, :meth:`PgDatabase.read`), so no connection is held
across a model or platform call: the store's methods return between them. Statements
are never prepared server-side (``prepare_threshold=None``), so the pool also works
behind PgBouncer in transaction mode.

The password is never part of the URL: it comes from ``THALOS_DATABASE_PASSWORD``, or
libpq finds it itself (``PGPASSWORD``, ``~/.pgpass``).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit, urlunsplit

import anyio
import psycopg
import structlog
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from thalos_bot.storage.database import DatabaseError
from thalos_bot.storage.migrations import Migration

log = structlog.get_logger(__name__)

PASSWORD_ENV = "THALOS_DATABASE_PASSWORD"  # noqa: S105 - the name of a variable
DEFAULT_POOL_SIZE = 10
DEFAULT_CONNECT_TIMEOUT_S = 10.0
STALLED_TRANSACTION_S = 10.0
"""How long the server lets a transaction of ours wait on its client before it ends the
session (``idle_in_transaction_session_timeout``). A replica stopped inside one (SIGSTOP,
a frozen VM, a process swapped out) would otherwise keep its row locks for as long as it
is stopped: the connection lease's row among them, which a fenced write holds ``FOR
SHARE`` and a takeover waits on, so no replica could take the connection over. Our
transactions never wait on anything but the database between two statements, so a
healthy one is never near it."""

Connection = psycopg.AsyncConnection[DictRow]


def redacted(url: str) -> str:
    """``url`` without any password, for logs and error messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host += f":{parts.port}"
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}" if user else host))


LISTEN_CONNECT_TIMEOUT_S = 5
"""How long a LISTEN connection may take to open (its connect cannot be cancelled)."""


@asynccontextmanager
async def listening(url: str, *channels: str) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    """A connection of its own, outside the pool, LISTENing on ``channels``; closed on
    exit even when a stop cancels the block."""
    # Shielded, so a stop during the connect never leaves an open connection behind.
    with anyio.CancelScope(shield=True):
        conn = await psycopg.AsyncConnection.connect(
            url, autocommit=True, connect_timeout=LISTEN_CONNECT_TIMEOUT_S, **connection_kwargs()
        )
    try:
        for channel in channels:
            await conn.execute(f"LISTEN {channel}")
        yield conn
    finally:
        # Not `async with conn`: its exit waits for the lock a notifies() generator cut
        # short holds, and a stop cancels that wait, leaving the connection open.
        with anyio.CancelScope(shield=True):
            await conn.close()


def connection_kwargs(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What every pooled connection is opened with."""
    env = os.environ if environ is None else environ
    kwargs: dict[str, Any] = {"prepare_threshold": None, "row_factory": dict_row}
    password = env.get(PASSWORD_ENV)
    if password:
        kwargs["password"] = password
    return kwargs


async def _bound_stalls(conn: Connection, *, seconds: float) -> None:
    """A new pooled connection's session: see :data:`STALLED_TRANSACTION_S`."""
    await conn.execute(
        "SELECT set_config('idle_in_transaction_session_timeout', %s, false)",
        (str(max(1, round(seconds * 1000))),),
    )
    await conn.commit()  # the pool takes a connection back idle only


class PgDatabase:
    """The pool. Create it with :meth:`open`."""

    def __init__(self, pool: AsyncConnectionPool[Connection], location: str) -> None:
        self._pool = pool
        self.location = location
        self.applied_on_open: tuple[str, ...] = ()

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        migrations: Sequence[Migration] | None = None,
        pool_size: int = DEFAULT_POOL_SIZE,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
        apply: bool = True,
        stalled_transaction: float = STALLED_TRANSACTION_S,
    ) -> PgDatabase:
        """Connect, open the pool and apply the pending migrations (under an advisory
        lock, so replicas starting together apply each one once). ``migrations``
        defaults to :data:`thalos_bot.storage.pg.schema.PG_MIGRATIONS`; ``apply=False``
        touches none (a short command using tables the daemon made). Raises
        :class:`DatabaseError` when the server cannot be reached or used.
        ``stalled_transaction``: see :data:`STALLED_TRANSACTION_S`."""
        location = redacted(url)
        kwargs = connection_kwargs()
        try:
            # One direct connection first: a wrong host or password is reported at once,
            # instead of as a pool that never fills.
            probe = await psycopg.AsyncConnection.connect(
                url, connect_timeout=max(1, int(connect_timeout)), **kwargs
            )
        except psycopg.Error as exc:
            raise DatabaseError(location, f"cannot connect ({first_line(exc)})") from exc
        await probe.close()
        pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
            url,
            connection_class=psycopg.AsyncConnection[DictRow],
            kwargs=kwargs,
            configure=partial(_bound_stalls, seconds=stalled_transaction),
            min_size=1,
            max_size=max(1, pool_size),
            timeout=connect_timeout,
            open=False,
            name="thalos-bot",
        )
        try:
            await pool.open(wait=True, timeout=connect_timeout)
        except PoolTimeout as exc:
            await pool.close()
            raise DatabaseError(location, "cannot connect (the pool did not fill)") from exc
        db = cls(pool, location)
        if not apply:
            return db
        try:
            from thalos_bot.storage.pg.migrate import migrate
            from thalos_bot.storage.pg.schema import PG_MIGRATIONS

            db.applied_on_open = tuple(
                await migrate(db, PG_MIGRATIONS if migrations is None else migrations)
            )
        except psycopg.Error as exc:
            await db.aclose()
            raise DatabaseError(location, f"cannot use it ({first_line(exc)})") from exc
        except BaseException:
            await db.aclose()
            raise
        log.info(
            "database-opened",
            path=location,
            engine="postgresql",
            migrations_applied=len(db.applied_on_open),
        )
        return db

    @property
    def conninfo(self) -> str:
        """What its connections are opened with (for a LISTEN's own connection)."""
        conninfo = self._pool.conninfo
        assert isinstance(conninfo, str)  # open() gives the pool its URL
        return conninfo

    @property
    def closed(self) -> bool:
        return self._pool.closed

    @property
    def connections_in_use(self) -> int:
        """Connections borrowed from the pool right now: 0 between two store calls."""
        stats = self._pool.get_stats()
        return int(stats["pool_size"]) - int(stats["pool_available"])

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """A connection of the pool, in autocommit off, for as long as the block lasts."""
        if self._pool.closed:
            raise DatabaseError(self.location, "it is closed")
        async with self._pool.connection() as conn:
            yield conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        """One read-committed transaction: committed at the end of the block, rolled
        back on any exception. Rows a write depends on are locked (``FOR UPDATE``)."""
        async with self.connection() as conn, conn.transaction():
            yield conn

    @asynccontextmanager
    async def read(self) -> AsyncIterator[Connection]:
        """A read-only transaction on one consistent snapshot."""
        async with self.connection() as conn, conn.transaction():
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield conn

    @asynccontextmanager
    async def single(self) -> AsyncIterator[Connection]:
        """A connection for one statement on its own, in autocommit: no ``BEGIN`` nor
        ``COMMIT`` around it, so a read costs one round trip (a statement sees one
        snapshot). Only for a single statement: each one commits apart."""
        async with self.connection() as conn:
            await conn.set_autocommit(True)
            try:
                yield conn
            finally:
                if not conn.closed:
                    await conn.set_autocommit(False)

    async def aclose(self) -> None:
        """Close the pool once its connections are back. Idempotent."""
        if self._pool.closed:
            return
        await self._pool.close()
        log.info("database-closed", path=self.location, engine="postgresql")

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


async def fetch_one(conn: Connection, sql: str, params: Sequence[Any] = ()) -> DictRow | None:
    cursor = await conn.execute(sql, params)
    return await cursor.fetchone()


async def fetch_all(conn: Connection, sql: str, params: Sequence[Any] = ()) -> list[DictRow]:
    cursor = await conn.execute(sql, params)
    return await cursor.fetchall()


@contextmanager
def as_database_error(location: str) -> Iterator[None]:
    """What psycopg or the pool raises in the block, as the store's
    :class:`DatabaseError` (its first line), for callers that fall back on it."""
    try:
        yield
    except (psycopg.Error, PoolTimeout, OSError) as exc:
        raise DatabaseError(location, first_line(exc)) from exc


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
