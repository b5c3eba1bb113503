"""The linked identities on PostgreSQL (the interface of
:class:`~thalos_bot.storage.links.SqlitePeopleLinks`), shared by the replicas: a code
issued on one is used on another."""

from __future__ import annotations

from datetime import datetime

from thalos_bot.storage.database import as_utc
from thalos_bot.storage.links import LINK_TABLES, Link, code_hash
from thalos_bot.storage.migrations import Migration
from thalos_bot.storage.pg.database import PgDatabase, fetch_all, fetch_one

PG_LINK_MIGRATIONS: list[Migration] = [
    Migration("0710_person_links", LINK_TABLES.format(time="TIMESTAMPTZ")),
]


class PgPeopleLinks:
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    async def issue(self, principal: str, code: str, expires_at: datetime) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO link_codes (code_hash, principal, expires_at) VALUES (%s, %s, %s)",
                (code_hash(code), principal, as_utc(expires_at)),
            )

    async def claim(self, code: str, transport: str, user_id: str, now: datetime) -> str | None:
        at = as_utc(now)
        async with self._db.transaction() as conn:
            row = await fetch_one(
                conn,
                "UPDATE link_codes SET used_at = %s WHERE code_hash = %s AND used_at IS NULL"
                " AND expires_at > %s RETURNING principal",
                (at, code_hash(code), at),
            )
            if row is None:
                return None
            principal = str(row["principal"])
            await conn.execute(
                "UPDATE person_links SET unlinked_at = %s WHERE transport = %s"
                " AND user_id = %s AND unlinked_at IS NULL",
                (at, transport, user_id),
            )
            await conn.execute(
                "INSERT INTO person_links (transport, user_id, principal, linked_at)"
                " VALUES (%s, %s, %s, %s)",
                (transport, user_id, principal, at),
            )
        return principal

    async def principal(self, transport: str, user_id: str) -> str | None:
        async with self._db.read() as conn:
            row = await fetch_one(
                conn,
                "SELECT principal FROM person_links WHERE transport = %s AND user_id = %s"
                " AND unlinked_at IS NULL",
                (transport, user_id),
            )
        return None if row is None else str(row["principal"])

    async def unlink(self, transport: str, user_id: str, now: datetime) -> str | None:
        async with self._db.transaction() as conn:
            row = await fetch_one(
                conn,
                "UPDATE person_links SET unlinked_at = %s WHERE transport = %s"
                " AND user_id = %s AND unlinked_at IS NULL RETURNING principal",
                (as_utc(now), transport, user_id),
            )
        return None if row is None else str(row["principal"])

    async def listing(self) -> list[Link]:
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT transport, user_id, principal, linked_at, unlinked_at"
                " FROM person_links ORDER BY linked_at, ctid",
                (),
            )
        return [
            Link(
                str(r["transport"]),
                str(r["user_id"]),
                str(r["principal"]),
                r["linked_at"],
                r["unlinked_at"],
            )
            for r in rows
        ]
