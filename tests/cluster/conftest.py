"""The cluster tests' PostgreSQL: the storage tests' throwaway server, a schema per test."""

from __future__ import annotations

from tests.storage.conftest import postgres_schema, postgres_server, postgres_url

__all__ = ["postgres_schema", "postgres_server", "postgres_url"]
