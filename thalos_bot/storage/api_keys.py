"""Keys for the OpenAI-compatible API: each acts as one person (and, optionally, only
with one agent). A key is shown once when made; only its SHA-256 is kept. A key is
never deleted: revoking marks it, so who held which key, and when, stays on record.

The same store keeps what each API conversation last saw (a digest of its history), so a
conversation that goes on after a restart, or on another replica, keeps its session."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from thalos_bot.storage.dialect import SqliteDialect
from thalos_bot.storage.migrations import Migration

PREFIX = "thk_"
API_KEY_TABLE = """
CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY NOT NULL,
    key_hash    TEXT NOT NULL UNIQUE,
    person      TEXT NOT NULL,
    agent       TEXT,
    created_at  {time} NOT NULL,
    expires_at  {time},
    revoked_at  {time}
);
"""
API_CONVERSATION_TABLE = """
CREATE TABLE api_conversations (
    id          TEXT PRIMARY KEY NOT NULL,
    key_id      TEXT NOT NULL REFERENCES api_keys (id),
    said        TEXT NOT NULL,
    updated_at  {time} NOT NULL
);
"""
API_KEY_MIGRATIONS: list[Migration] = [
    Migration("0730_api_keys", API_KEY_TABLE.format(time="TEXT")),
]
API_CONVERSATION_MIGRATIONS: list[Migration] = [
    Migration("0750_api_conversations", API_CONVERSATION_TABLE.format(time="TEXT")),
]


def new_key() -> tuple[str, str]:
    """A new key's id (shown in lists) and the key itself (shown once)."""
    key_id = "key_" + secrets.token_hex(4)
    return key_id, PREFIX + secrets.token_urlsafe(32)


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: str
    person: str
    agent: str | None
    created_at: datetime
    expires_at: datetime | None = None
    revoked_at: datetime | None = None

    def usable(self, now: datetime) -> str | None:
        """Why the key may not be used now (None: it may)."""
        if self.revoked_at is not None:
            return "this API key was revoked"
        if self.expires_at is not None and now >= self.expires_at:
            return "this API key has expired"
        return None


class SqliteApiKeys(SqliteDialect):
    """The keys in the daemon's SQLite file; PostgreSQL's
    (:class:`~thalos_bot.storage.pg.api_keys.PgApiKeys`) is this in its dialect."""

    def _key(self, row: Any) -> ApiKey:
        created = self._time(row["created_at"])
        assert created is not None
        agent = row["agent"]
        return ApiKey(
            str(row["id"]),
            str(row["person"]),
            None if agent is None else str(agent),
            created,
            self._time(row["expires_at"]),
            self._time(row["revoked_at"]),
        )

    async def create(
        self, person: str, agent: str | None, now: datetime, expires_at: datetime | None
    ) -> tuple[ApiKey, str]:
        """A new key for ``person``: the record, and the key (to show once)."""
        key_id, key = new_key()
        async with self._db.transaction() as conn:
            await conn.execute(
                self._sql(
                    "INSERT INTO api_keys (id, key_hash, person, agent, created_at, expires_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)"
                ),
                (key_id, key_hash(key), person, agent, self._at(now), self._at(expires_at)),
            )
        return ApiKey(key_id, person, agent, now, expires_at), key

    async def find(self, key: str) -> ApiKey | None:
        """The key's record, when ``key`` is one (compared by hash, in constant time)."""
        if not key.startswith(PREFIX):
            return None
        wanted = key_hash(key)
        async with self._db.read() as conn:
            row = await self._one(conn, "SELECT * FROM api_keys WHERE key_hash = ?", (wanted,))
        if row is None or not hmac.compare_digest(str(row["key_hash"]), wanted):
            return None
        return self._key(row)

    async def listing(self) -> list[ApiKey]:
        async with self._db.read() as conn:
            rows = await self._all(conn, "SELECT * FROM api_keys ORDER BY created_at, id", ())
        return [self._key(row) for row in rows]

    async def revoke(self, key_id: str, now: datetime) -> bool:
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                self._sql("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"),
                (self._at(now), key_id),
            )
            return bool(cursor.rowcount == 1)

    async def said(self, conversation: str) -> str | None:
        """The digest of the history ``conversation`` last saw (None: a new one)."""
        async with self._db.read() as conn:
            row = await self._one(
                conn, "SELECT said FROM api_conversations WHERE id = ?", (conversation,)
            )
        return None if row is None else str(row["said"])

    async def keep_said(self, conversation: str, key_id: str, said: str, now: datetime) -> None:
        """What ``conversation`` (held by the key ``key_id``) has seen now."""
        async with self._db.transaction() as conn:
            await conn.execute(self._sql(_KEEP_SAID), (conversation, key_id, said, self._at(now)))


_KEEP_SAID = (
    "INSERT INTO api_conversations (id, key_id, said, updated_at) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (id) DO UPDATE SET said = excluded.said, updated_at = excluded.updated_at"
)
