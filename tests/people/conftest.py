"""The people tests run on both stores: PostgreSQL's fixtures from the storage tests."""

import pytest

from tests.storage.backends import BACKENDS
from tests.storage.conftest import (
    migrated_schema,
    migrated_template,
    migrated_url,
    postgres_schema,
    postgres_server,
    postgres_url,
)

__all__ = [
    "migrated_schema",
    "migrated_template",
    "migrated_url",
    "postgres_schema",
    "postgres_server",
    "postgres_url",
    "storage",
]


@pytest.fixture(params=BACKENDS)
def storage(request: pytest.FixtureRequest) -> str:
    """The daemon's ``[storage]`` section: none (SQLite), or an up-to-date PostgreSQL
    database of the test's own."""
    if request.param == "sqlite":
        return ""
    return f'[storage]\nurl = "{request.getfixturevalue("migrated_url")}"\n'
