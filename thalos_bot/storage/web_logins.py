"""The web page's logins in the daemon's SQLite file: the cookie's signing secret, the
logouts and the one-time login codes (:class:`~thalos_bot.channels.logins.SharedLogins`;
on PostgreSQL, :class:`~thalos_bot.cluster.web_logins.PgLogins` keeps the same for every
replica).

``thalos-bot web pair`` writes a code here while the daemon runs, as ``api key create``
writes a key. A code is kept only as its hash; a logout until the cookie's own expiry.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from thalos_bot.storage.database import Database, fetch_all, fetch_one
from thalos_bot.storage.migrations import Migration

WEB_LOGIN_MIGRATIONS: list[Migration] = [
    Migration(
        "0760_web_logins",
        """
        CREATE TABLE web_secret (
            name    TEXT PRIMARY KEY,
            secret  BLOB NOT NULL
        );
        CREATE TABLE web_logouts (
            seq         INTEGER PRIMARY KEY AUTOINCREMENT,
            principal   TEXT NOT NULL,
            nonce       TEXT NOT NULL UNIQUE,
            expires_at  REAL NOT NULL
        );
        CREATE TABLE web_pairing (
            digest      TEXT PRIMARY KEY,
            principal   TEXT NOT NULL,
            expires_at  REAL NOT NULL
        );
        """,
    ),
]
SECRET_NAME = "web"  # noqa: S105 - the row's name; the secret is made at first use


@dataclass(frozen=True, slots=True)
class Revoked:
    seq: int
    principal: str
    nonce: str
    expires_at: float
    """The cookie's own expiry (epoch seconds): kept until then."""


class SqliteLogins:
    def __init__(self, db: Database, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock

    async def secret(self, made: bytes) -> bytes:
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO web_secret (name, secret) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
                (SECRET_NAME, made),
            )
            row = await fetch_one(
                conn, "SELECT secret FROM web_secret WHERE name = ?", (SECRET_NAME,)
            )
        assert row is not None
        return bytes(row["secret"])

    async def revoke(self, principal: str, nonce: str, expires_at: float) -> None:
        async with self._db.transaction() as conn:
            await conn.execute("DELETE FROM web_logouts WHERE expires_at <= ?", (self._clock(),))
            await conn.execute(
                "INSERT INTO web_logouts (principal, nonce, expires_at) VALUES (?, ?, ?)"
                " ON CONFLICT (nonce) DO NOTHING",
                (principal, nonce, expires_at),
            )

    async def revoked_after(self, seq: int) -> list[Revoked]:
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT seq, principal, nonce, expires_at FROM web_logouts"
                " WHERE seq > ? AND expires_at > ? ORDER BY seq",
                (seq, self._clock()),
            )
        return [
            Revoked(int(r["seq"]), str(r["principal"]), str(r["nonce"]), float(r["expires_at"]))
            for r in rows
        ]

    async def issue_code(self, digest: str, principal: str, ttl: float) -> None:
        now = self._clock()
        async with self._db.transaction() as conn:
            await conn.execute("DELETE FROM web_pairing WHERE expires_at <= ?", (now,))
            await conn.execute(
                "INSERT INTO web_pairing (digest, principal, expires_at) VALUES (?, ?, ?)"
                " ON CONFLICT (digest) DO UPDATE SET principal = excluded.principal,"
                " expires_at = excluded.expires_at",
                (digest, principal, now + ttl),
            )

    async def redeem_code(self, digest: str) -> str | None:
        async with self._db.transaction() as conn:
            row = await fetch_one(
                conn,
                "DELETE FROM web_pairing WHERE digest = ? RETURNING principal, expires_at",
                (digest,),
            )
        if row is None or float(row["expires_at"]) <= self._clock():
            return None
        return str(row["principal"])
