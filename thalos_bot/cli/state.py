"""The daemon's stores as a one-shot command reads them, on either engine.

The composition root (:func:`thalos_bot.service.stores.open_stores`) opens SQLite or
PostgreSQL as ``[storage]`` says; a command reads through the same ports the daemon
writes through, so its output is the same on both. A SQLite state that does not exist
yet is not made by a command that only reads: :func:`opened` yields None then, and
:func:`where` says which file was looked for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from thalos_bot.config.loader import LoadedConfig
from thalos_bot.service.stores import Stores, open_stores


def where(loaded: LoadedConfig) -> str:
    """The state a command reads, for its messages (a url never with its password)."""
    target = loaded.settings.storage.target
    if target.kind == "postgresql" and target.url is not None:
        from thalos_bot.storage.pg.database import redacted  # psycopg: only for a server

        return redacted(target.url)
    return f"the database at {loaded.database_path}"


def exists(loaded: LoadedConfig) -> bool:
    """False only for a SQLite state file not made yet (a server is always asked)."""
    target = loaded.settings.storage.target
    return target.kind == "postgresql" or loaded.database_path.exists()


@asynccontextmanager
async def opened(loaded: LoadedConfig) -> AsyncIterator[Stores | None]:
    """The stores ``loaded`` names, or None when its SQLite file does not exist."""
    if not exists(loaded):
        yield None
        return
    async with open_stores(loaded) as stores:
        yield stores
