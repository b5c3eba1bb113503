"""One request at a time per API conversation across replicas: a claim is a row of
``conversation_leases`` (channel ``api``, the conversation as its lane), taken with one
UPSERT that succeeds only when nobody holds it or its holder's lease ran out (by the
server's clock).

The request that holds it renews it every third of its span while its answer runs and
releases it when the answer ends, so a request of the same conversation that reaches
another replica meanwhile is told the conversation is busy, as on one process. A replica
killed mid-answer holds it at most ``span`` seconds more.
"""

from __future__ import annotations

from datetime import timedelta

from thalos_bot.cluster.replicas import replica_id
from thalos_bot.storage.pg.database import PgDatabase, as_database_error

CHANNEL = "api"
"""The claims' ``channel_id`` in ``conversation_leases`` (no transport uses it)."""
SPAN = 30.0

CLAIM = """
INSERT INTO conversation_leases AS l (channel_id, lane, holder, token, expires_at)
VALUES (%(channel)s, %(lane)s, %(holder)s, 1, now() + %(span)s)
ON CONFLICT (channel_id, lane) DO UPDATE SET
    holder = EXCLUDED.holder, token = l.token + 1, expires_at = EXCLUDED.expires_at
WHERE l.holder IS NULL OR l.expires_at <= now()
RETURNING token
"""


class PgConversationClaims:
    def __init__(self, db: PgDatabase, span: float = SPAN, holder: str | None = None) -> None:
        self._db = db
        self.span = span
        self.holder = holder or replica_id()

    async def claim(self, conversation: str) -> int | None:
        """The claim's token, or None while another request (anywhere) holds it."""
        return await self._one(
            CLAIM,
            {
                "channel": CHANNEL,
                "lane": conversation,
                "holder": self.holder,
                "span": timedelta(seconds=self.span),
            },
        )

    async def renew(self, conversation: str, token: int) -> bool:
        """Extend the claim; False when it was lost (it ran out and was taken)."""
        row = await self._one(
            "UPDATE conversation_leases SET expires_at = now() + %(span)s"
            " WHERE channel_id = %(channel)s AND lane = %(lane)s AND token = %(token)s"
            " AND holder = %(holder)s RETURNING token",
            {
                "channel": CHANNEL,
                "lane": conversation,
                "token": token,
                "holder": self.holder,
                "span": timedelta(seconds=self.span),
            },
        )
        return row is not None

    async def release(self, conversation: str, token: int | None) -> None:
        """Let the claim go. ``None``: the claim's own answer never came back (it timed
        out, maybe after its commit), so whatever this replica holds there goes; the
        caller holds the conversation locally until this returns, so no other request
        of it claims here meanwhile."""
        # Deleted, not kept: an API conversation is claimed only while it answers, and
        # a stale holder's token cannot match a later claim (its holder is another's).
        await self._one(
            "DELETE FROM conversation_leases"
            " WHERE channel_id = %(channel)s AND lane = %(lane)s"
            " AND (token = %(token)s OR %(token)s::bigint IS NULL)"
            " AND holder = %(holder)s RETURNING token",
            {"channel": CHANNEL, "lane": conversation, "token": token, "holder": self.holder},
        )

    async def _one(self, sql: str, params: dict[str, object]) -> int | None:
        """The token the statement returns (None: no row matched)."""
        with as_database_error(self._db.location):
            async with self._db.transaction() as conn:
                cursor = await conn.execute(sql, params)
                row = await cursor.fetchone()
        return None if row is None else int(row["token"])
