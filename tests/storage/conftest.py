"""The storage tests' PostgreSQL: one throwaway server per session, a schema per test."""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn
from urllib.parse import quote

import anyio
import pytest
import structlog

from tests.storage.postgres import PostgresServer, PostgresUnavailableError, start_server
from thalos_bot.service.schema import ALL_MIGRATIONS, PG_ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.outbox import OutboxStore, SqliteOutbox
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.pg.outbox import PgOutbox
from thalos_bot.storage.pg.sessions import PgSessionStore
from thalos_bot.storage.pg.usage import PgUsageLedger
from thalos_bot.storage.protocol import SessionStore
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.storage.usage import SqliteUsageLedger, UsageLedger

log = structlog.get_logger(__name__)
_DATABASE = "thalos_tests"
_TEMPLATE = "thalos_migrated"
"""A database whose one schema (:data:`_MIGRATED`) holds every migration."""
_MIGRATED = "migrated"
_schemas = itertools.count(1)
_started: list[float] = []


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """How long the throwaway server took to start, on the run's summary."""
    for seconds in _started:
        terminalreporter.write_line(f"postgres: initdb and start took {seconds:.2f} s")


def unavailable(reason: str) -> NoReturn:
    """Skip the test that needs PostgreSQL, or fail it when ``CI`` is set."""
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL could not be started under CI: {reason}")
    pytest.skip(f"PostgreSQL could not be started: {reason}")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The server, started once. Skipped when it cannot start, unless ``CI`` is set:
    CI must run the PostgreSQL tests, so there a failure to start fails them."""
    try:
        server = start_server()
    except PostgresUnavailableError as exc:
        unavailable(str(exc))
    log.info("postgres-started", port=server.port, seconds=round(server.start_seconds, 3))
    _started.append(server.start_seconds)
    server.create_database(_DATABASE)
    try:
        yield server
    finally:
        server.stop()


@dataclass(frozen=True, slots=True)
class PostgresSchema:
    server: PostgresServer
    database: str
    name: str

    def url(self, user: str | None = None) -> str:
        """A URL whose connections see only this schema (``search_path``)."""
        base = self.server.url(self.database)
        if user is not None:
            base = base.replace(f"//{self.server.user}@", f"//{user}@", 1)
        return f"{base}?options={quote(f'-c search_path={self.name}')}"

    def sql(self, statement: str) -> str:
        """Run ``statement`` as the superuser, in this schema."""
        return self.server.psql(self.database, f"SET search_path = {self.name}; {statement}")


@pytest.fixture
def postgres_schema(postgres_server: PostgresServer) -> Iterator[PostgresSchema]:
    """A fresh schema of the session's test database, dropped after the test."""
    schema = PostgresSchema(postgres_server, _DATABASE, f"t{next(_schemas)}")
    postgres_server.psql(_DATABASE, f"CREATE SCHEMA {schema.name}")
    yield schema
    postgres_server.psql(_DATABASE, f"DROP SCHEMA {schema.name} CASCADE")


@pytest.fixture(scope="session")
def migrated_template(postgres_server: PostgresServer) -> str:
    """The session's database whose schema has every migration applied, made once
    (by :meth:`PgDatabase.open`, as a daemon's first start does): the name of a template
    for :func:`migrated_schema`."""
    postgres_server.psql("postgres", f'CREATE DATABASE "{_TEMPLATE}"')
    postgres_server.psql(_TEMPLATE, f"CREATE SCHEMA {_MIGRATED}")
    url = PostgresSchema(postgres_server, _TEMPLATE, _MIGRATED).url()
    failed: list[BaseException] = []

    def migrate() -> None:
        async def opened() -> None:
            async with await PgDatabase.open(url, migrations=PG_ALL_MIGRATIONS):
                pass

        try:
            anyio.run(opened)
        except BaseException as exc:  # raised again in the test's thread
            failed.append(exc)

    # Its own thread: an event loop of its own, whatever the test's runner keeps.
    worker = threading.Thread(target=migrate, name="migrated-template")
    worker.start()
    worker.join()
    if failed:
        raise failed[0]
    return _TEMPLATE


@pytest.fixture
def migrated_schema(
    postgres_server: PostgresServer, migrated_template: str
) -> Iterator[PostgresSchema]:
    """A fresh database of its own, copied from :func:`migrated_template`: its schema is
    up to date, as a store is for every start after the first. For the tests whose
    subject is not the migrations (a copy takes tens of milliseconds; applying every
    migration again, a few tenths of a second, and more for replicas starting together
    under the migrations' lock). Dropped after the test."""
    database = f"{_TEMPLATE}_{next(_schemas)}"
    postgres_server.copy_database(migrated_template, database)
    yield PostgresSchema(postgres_server, database, _MIGRATED)
    postgres_server.drop_database(database)


@pytest.fixture
def migrated_url(migrated_schema: PostgresSchema) -> str:
    """A URL whose connections see only an up-to-date schema of their own: for the store
    contracts, which test what a store does, not how it was migrated."""
    return migrated_schema.url()


@pytest.fixture
def postgres_url(postgres_schema: PostgresSchema) -> str:
    """A URL whose connections see only a fresh schema of their own."""
    return postgres_schema.url()


@dataclass(frozen=True, slots=True)
class Backend:
    """One database's session store, outbox and usage ledger, for the suites that run
    against every database."""

    name: str
    sessions: SessionStore
    outbox: OutboxStore
    ledger: UsageLedger
    duplicate: str
    """A pattern the error of a duplicate key matches, in this database's words."""
    refuse_usage: Callable[[], Awaitable[None]]
    """Make every insert into the usage ledger fail with ``usage refused``."""


@pytest.fixture(params=["sqlite", "postgres"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    if request.param == "sqlite":
        async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:

            async def refuse_sqlite() -> None:
                async with db.transaction() as conn:
                    await conn.execute(
                        "CREATE TRIGGER usage_refused BEFORE INSERT ON usage_daily "
                        "BEGIN SELECT RAISE(ABORT, 'usage refused'); END"
                    )

            yield Backend(
                "sqlite",
                SqliteSessionStore(db),
                SqliteOutbox(db),
                SqliteUsageLedger(db),
                "UNIQUE constraint failed",
                refuse_sqlite,
            )
        return
    async with await PgDatabase.open(request.getfixturevalue("migrated_url")) as pg:

        async def refuse_postgres() -> None:
            async with pg.transaction() as conn:
                await conn.execute(
                    "CREATE FUNCTION usage_refused() RETURNS trigger LANGUAGE plpgsql"
                    " AS $$ BEGIN RAISE EXCEPTION 'usage refused'; END $$"
                )
                await conn.execute(
                    "CREATE TRIGGER usage_refused BEFORE INSERT ON usage_daily"
                    " FOR EACH ROW EXECUTE FUNCTION usage_refused()"
                )

        yield Backend(
            "postgres",
            PgSessionStore(pg),
            PgOutbox(pg),
            PgUsageLedger(pg),
            "duplicate key value violates unique constraint",
            refuse_postgres,
        )
