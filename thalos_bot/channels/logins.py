"""The port for a channel that serves a page with logins: the cookie's signing secret,
the logouts (the nonces of logins revoked before they expired) and the one-time login
codes, kept in the daemon's store so they outlive a restart and the command that issues
a code reaches the daemon: its SQLite file (:mod:`thalos_bot.storage.web_logins`), or
with ``[storage] url`` on PostgreSQL the shared store
(:mod:`thalos_bot.cluster.web_logins`), where they are the whole bot's: a browser may
reach any replica.

A code is handed over as a SHA-256 of it, never the code; the logouts carry a growing
``seq`` so a reader asks only for the ones it has not seen.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Protocol

from thalos_bot.storage.database import Database, DatabaseError, fetch_one
from thalos_bot.storage.web_logins import Revoked, SqliteLogins

if TYPE_CHECKING:
    from thalos_bot.config.loader import LoadedConfig

__all__ = ["Revoked", "SharedLogins", "daemon_logins"]


class SharedLogins(Protocol):
    async def secret(self, made: bytes) -> bytes:
        """The signing secret every replica uses: ``made`` when none was kept yet (the
        first replica's wins when two start together)."""
        ...

    async def revoke(self, principal: str, nonce: str, expires_at: float) -> None:
        """Log a login out on every replica (kept until ``expires_at``)."""
        ...

    async def revoked_after(self, seq: int) -> list[Revoked]:
        """The logouts after ``seq`` (0: all), oldest first, perhaps with a few seen
        already (known by their nonce); expired ones are left out."""
        ...

    async def issue_code(self, digest: str, principal: str, ttl: float) -> None:
        """Keep a one-time code (its digest) for ``principal``, good for ``ttl`` s."""
        ...

    async def redeem_code(self, digest: str) -> str | None:
        """The principal of the code whose digest is ``digest``, once; None when it is
        unknown, used or expired."""
        ...


@asynccontextmanager
async def daemon_logins(loaded: LoadedConfig) -> AsyncIterator[SharedLogins | None]:
    """The logins of the daemon ``loaded`` configures, for a command run beside it (a
    transport's ``pair``); None when its SQLite file is not made yet. The schema is the
    daemon's: a store without the tables (the daemon not started since they came) raises
    :class:`DatabaseError` saying so."""
    target = loaded.settings.storage.target
    if target.kind == "postgresql" and target.url is not None:
        from thalos_bot.cluster.web_logins import PgLogins
        from thalos_bot.storage.pg.database import PgDatabase
        from thalos_bot.storage.pg.database import fetch_one as pg_one

        async with await PgDatabase.open(target.url, pool_size=1, apply=False) as pg:
            async with pg.read() as conn:
                found = await pg_one(conn, "SELECT to_regclass('web_pairing') AS t", ())
            _made_by_the_daemon(pg.location, found is not None and found["t"] is not None)
            yield PgLogins(pg)
        return
    path = loaded.database_path
    if not path.exists():
        yield None
        return
    async with await Database.open(path, apply=False) as db:
        async with db.read() as conn:
            table = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'web_pairing'"
            _made_by_the_daemon(db.location, await fetch_one(conn, table) is not None)
        yield SqliteLogins(db)


def _made_by_the_daemon(location: str, made: bool) -> None:
    if not made:
        raise DatabaseError(location, "it has no logins yet: start the daemon once first")
