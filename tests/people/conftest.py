"""The people tests run on both stores: PostgreSQL's fixtures from the storage tests."""

import pytest

from tests.storage.backends import BACKENDS
from tests.storage.conftest import postgres_schema, postgres_server, postgres_url

__all__ = ["postgres_schema", "postgres_server", "postgres_url", "storage"]


@pytest.fixture(params=BACKENDS)
def storage(request: pytest.FixtureRequest) -> str:
    """The daemon's ``[storage]`` section: none (SQLite), or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        return ""
    return f'[storage]\nurl = "{request.getfixturevalue("postgres_url")}"\n'
