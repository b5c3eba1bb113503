"""The storage tests' PostgreSQL: one throwaway server per session, a schema per test."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from urllib.parse import quote

import pytest
import structlog

from tests.storage.postgres import PostgresServer, PostgresUnavailableError, start_server

log = structlog.get_logger(__name__)
_DATABASE = "thalos_tests"
_schemas = itertools.count(1)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The server, started once. Skipped when it cannot start, unless ``CI`` is set:
    CI must run the PostgreSQL tests, so there a failure to start fails them."""
    try:
        server = start_server()
    except PostgresUnavailableError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL could not be started under CI: {exc}")
        pytest.skip(f"PostgreSQL could not be started: {exc}")
    log.info("postgres-started", port=server.port, seconds=round(server.start_seconds, 3))
    print(f"\npostgres: started in {server.start_seconds:.2f} s on port {server.port}")  # noqa: T201
    server.create_database(_DATABASE)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A URL whose connections see only a fresh schema of their own (dropped after)."""
    schema = f"t{next(_schemas)}"
    postgres_server.psql(_DATABASE, f"CREATE SCHEMA {schema}")
    options = quote(f"-c search_path={schema}")
    yield f"{postgres_server.url(_DATABASE)}?options={options}"
    postgres_server.psql(_DATABASE, f"DROP SCHEMA {schema} CASCADE")
