"""A store on either backend, for the contract tests that run on SQLite and PostgreSQL:
parametrize a fixture with ``params=BACKENDS`` and open the store with :func:`on`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from thalos_bot.service.schema import ALL_MIGRATIONS, PG_ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.pg.database import PgDatabase

BACKENDS = ["sqlite", "postgres"]


@asynccontextmanager
async def on(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    sqlite: Callable[[Database], object],
    postgres: Callable[[PgDatabase], object],
) -> AsyncIterator[Any]:
    """The store ``request.param`` names, over a fresh database with every migration
    (typed by the fixture that yields it)."""
    if request.param == "sqlite":
        async with await Database.open(tmp_path / "t.db", migrations=ALL_MIGRATIONS) as db:
            yield sqlite(db)
        return
    url = request.getfixturevalue("migrated_url")
    async with await PgDatabase.open(url, migrations=PG_ALL_MIGRATIONS) as pg:
        yield postgres(pg)
