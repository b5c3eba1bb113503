"""The web page's logins shared by replicas (:class:`~thalos_bot.channels.logins.SharedLogins`
on PostgreSQL): the cookie's signing secret (``web_secret``), the logouts
(``web_logouts``) and the one-time login codes (``web_pairing``).

A code's expiry is the server's ``now()`` plus its life, so replicas whose clocks
disagree agree on it; a logout is kept until the cookie's own expiry, which the replica
that signed it wrote in the cookie. Two logouts may commit out of their ``seq`` order, so
:meth:`PgLogins.revoked_after` also gives those written in the last ten seconds again
(the reader knows them by their nonce): none is skipped.
"""

from __future__ import annotations

from thalos_bot.storage.pg.database import PgDatabase, fetch_all, fetch_one
from thalos_bot.storage.web_logins import SECRET_NAME, Revoked


class PgLogins:
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    async def secret(self, made: bytes) -> bytes:
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO web_secret (name, secret) VALUES (%s, %s)"
                " ON CONFLICT (name) DO NOTHING",
                (SECRET_NAME, made),
            )
            row = await fetch_one(
                conn, "SELECT secret FROM web_secret WHERE name = %s", (SECRET_NAME,)
            )
        assert row is not None
        return bytes(row["secret"])

    async def revoke(self, principal: str, nonce: str, expires_at: float) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "DELETE FROM web_logouts WHERE expires_at <= extract(epoch FROM now())"
            )
            await conn.execute(
                "INSERT INTO web_logouts (principal, nonce, expires_at) VALUES (%s, %s, %s)"
                " ON CONFLICT (nonce) DO NOTHING",
                (principal, nonce, expires_at),
            )

    async def revoked_after(self, seq: int) -> list[Revoked]:
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT seq, principal, nonce, expires_at FROM web_logouts"
                " WHERE (seq > %s OR written_at > now() - interval '10 seconds')"
                " AND expires_at > extract(epoch FROM now()) ORDER BY seq",
                (seq,),
            )
        return [
            Revoked(int(r["seq"]), str(r["principal"]), str(r["nonce"]), float(r["expires_at"]))
            for r in rows
        ]

    async def issue_code(self, digest: str, principal: str, ttl: float) -> None:
        async with self._db.transaction() as conn:
            await conn.execute("DELETE FROM web_pairing WHERE expires_at <= now()")
            await conn.execute(
                "INSERT INTO web_pairing (digest, principal, expires_at)"
                " VALUES (%s, %s, now() + make_interval(secs => %s))"
                " ON CONFLICT (digest) DO UPDATE SET principal = EXCLUDED.principal,"
                " expires_at = EXCLUDED.expires_at",
                (digest, principal, ttl),
            )

    async def redeem_code(self, digest: str) -> str | None:
        async with self._db.transaction() as conn:
            row = await fetch_one(
                conn,
                "DELETE FROM web_pairing WHERE digest = %s RETURNING principal,"
                " expires_at > now() AS live",
                (digest,),
            )
        return str(row["principal"]) if row is not None and row["live"] else None
