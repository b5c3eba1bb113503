"""The media prune on PostgreSQL: the rule of :mod:`thalos_bot.media.prune`, in
PostgreSQL's JSON functions, one replica at a time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from thalos_bot.domain.clock import utc_now
from thalos_bot.media.prune import Pruner
from thalos_bot.storage.database import as_utc
from thalos_bot.storage.pg.database import PgDatabase, fetch_all

_REFERENCED = """
SELECT DISTINCT block ->> 'media_hash'
FROM sessions AS s
JOIN session_messages AS m ON m.session_id = s.id,
     jsonb_array_elements(
         CASE WHEN jsonb_typeof(m.content::jsonb -> 'content') = 'array'
              THEN m.content::jsonb -> 'content' ELSE '[]'::jsonb END
     ) AS block
WHERE (s.status = 'open' OR s.updated_at >= %s)
  AND m.content LIKE '%%"media_hash"%%'
  AND block ->> 'type' IN ('image', 'document')
  AND block ->> 'media_hash' IS NOT NULL
"""

_CANDIDATES = f"""
SELECT m.hash, m.media_type, m.size, m.created_at,
       (SELECT o.kind FROM media_origins AS o WHERE o.hash = m.hash LIMIT 1) AS kind
FROM media AS m
WHERE m.created_at < %s
  AND m.hash NOT IN ({_REFERENCED})
ORDER BY m.created_at, m.hash
"""  # noqa: S608 - constant SQL, no input in it
PRUNE_LOCK = 0x7468616C6F7370  # "thalosp": one replica prunes at a time


class PgMediaPruner(Pruner):
    """Prunes the ``media`` table of the PostgreSQL ``db``; ``retention`` in seconds."""

    def __init__(
        self, db: PgDatabase, retention: float, clock: Callable[[], datetime] = utc_now
    ) -> None:
        super().__init__(retention, clock)
        self._db = db

    async def _prune_rows(self, cutoff: datetime, *, dry_run: bool) -> Sequence[Any]:
        """The rows are weighed under a table lock that lets readers on, and only one
        replica prunes at a time (a transaction-level advisory lock; another one's
        round meanwhile prunes nothing)."""
        params = (as_utc(cutoff),) * 2  # last stored before; closed before
        if dry_run:
            async with self._db.read() as conn:
                return await fetch_all(conn, _CANDIDATES, params)
        async with self._db.transaction() as conn:
            locked = await fetch_all(
                conn, "SELECT pg_try_advisory_xact_lock(%s) AS got", (PRUNE_LOCK,)
            )
            if not locked[0]["got"]:
                return []
            # A turn storing an item anew refreshes its created_at first: not a candidate.
            await conn.execute("LOCK TABLE media IN SHARE ROW EXCLUSIVE MODE")
            rows = await fetch_all(conn, _CANDIDATES, params)
            if rows:
                await conn.execute(
                    "DELETE FROM media WHERE hash = ANY(%s)", ([row["hash"] for row in rows],)
                )
        return rows
