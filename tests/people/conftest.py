"""The people tests run on both stores: PostgreSQL's fixtures from the storage tests."""

from tests.storage.conftest import postgres_schema, postgres_server, postgres_url

__all__ = ["postgres_schema", "postgres_server", "postgres_url"]
