"""Identities people linked from a chat (``/link``), beside those ``[[people]]`` lists.

A person asks for a code in one chat; typed in another chat within its lifetime, it
makes that chat's sender the same person (their principal). A code works once, and is
kept only as its hash. A link is never deleted: unlinking marks it, so who was linked
to whom, and when, stays on record."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from thalos_bot.domain.codes import code_hash
from thalos_bot.storage.dialect import SqliteDialect
from thalos_bot.storage.migrations import Migration

LINK_TABLES = """
CREATE TABLE link_codes (
    code_hash   TEXT PRIMARY KEY,
    principal   TEXT NOT NULL,
    expires_at  {time} NOT NULL,
    used_at     {time}
);
CREATE TABLE person_links (
    transport    TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    principal    TEXT NOT NULL,
    linked_at    {time} NOT NULL,
    unlinked_at  {time}
);
CREATE UNIQUE INDEX person_links_live ON person_links (transport, user_id)
    WHERE unlinked_at IS NULL;
"""
LINK_MIGRATIONS: list[Migration] = [
    Migration("0710_person_links", LINK_TABLES.format(time="TEXT")),
]


@dataclass(frozen=True, slots=True)
class Link:
    transport: str
    user_id: str
    principal: str
    linked_at: datetime
    unlinked_at: datetime | None = None


class PeopleLinks(Protocol):
    async def issue(self, principal: str, code: str, expires_at: datetime) -> None:
        """Keep a new code for ``principal`` (its hash) until ``expires_at``."""
        ...

    async def claim(self, code: str, transport: str, user_id: str, now: datetime) -> str | None:
        """Use ``code``: link ``transport``/``user_id`` to its principal (replacing a
        link it had) and return that principal; None when the code is unknown, used or
        expired (nothing changes)."""
        ...

    async def principal(self, transport: str, user_id: str) -> str | None:
        """Whom the identity is linked to now."""
        ...

    async def unlink(self, transport: str, user_id: str, now: datetime) -> str | None:
        """End the identity's link; the principal it was linked to (None: none)."""
        ...

    async def listing(self) -> list[Link]:
        """Every link, live and ended, oldest first."""
        ...


class SqlitePeopleLinks(SqliteDialect):
    """:class:`PeopleLinks` in the daemon's SQLite file; the PostgreSQL store
    (:class:`~thalos_bot.storage.pg.links.PgPeopleLinks`) is this in its dialect."""

    async def issue(self, principal: str, code: str, expires_at: datetime) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                self._sql(
                    "INSERT INTO link_codes (code_hash, principal, expires_at) VALUES (?, ?, ?)"
                ),
                (code_hash(code), principal, self._at(expires_at)),
            )

    async def claim(self, code: str, transport: str, user_id: str, now: datetime) -> str | None:
        at = self._at(now)
        async with self._db.transaction() as conn:
            row = await self._one(
                conn,
                "UPDATE link_codes SET used_at = ? WHERE code_hash = ? AND used_at IS NULL"
                " AND expires_at > ? RETURNING principal",
                (at, code_hash(code), at),
            )
            if row is None:
                return None
            principal = str(row["principal"])
            await conn.execute(
                self._sql(
                    "UPDATE person_links SET unlinked_at = ? WHERE transport = ? AND user_id = ?"
                    " AND unlinked_at IS NULL"
                ),
                (at, transport, user_id),
            )
            await conn.execute(
                self._sql(
                    "INSERT INTO person_links (transport, user_id, principal, linked_at)"
                    " VALUES (?, ?, ?, ?)"
                ),
                (transport, user_id, principal, at),
            )
        return principal

    async def principal(self, transport: str, user_id: str) -> str | None:
        async with self._db.read() as conn:
            row = await self._one(
                conn,
                "SELECT principal FROM person_links WHERE transport = ? AND user_id = ?"
                " AND unlinked_at IS NULL",
                (transport, user_id),
            )
        return None if row is None else str(row["principal"])

    async def unlink(self, transport: str, user_id: str, now: datetime) -> str | None:
        async with self._db.transaction() as conn:
            row = await self._one(
                conn,
                "UPDATE person_links SET unlinked_at = ? WHERE transport = ? AND user_id = ?"
                " AND unlinked_at IS NULL RETURNING principal",
                (self._at(now), transport, user_id),
            )
        return None if row is None else str(row["principal"])

    async def listing(self) -> list[Link]:
        async with self._db.read() as conn:
            rows = await self._all(
                conn,
                "SELECT transport, user_id, principal, linked_at, unlinked_at"
                " FROM person_links ORDER BY linked_at, principal",
                (),
            )
        return [
            Link(
                str(r["transport"]),
                str(r["user_id"]),
                str(r["principal"]),
                _when(self._time(r["linked_at"])),
                self._time(r["unlinked_at"]),
            )
            for r in rows
        ]


def _when(at: datetime | None) -> datetime:
    assert at is not None
    return at
