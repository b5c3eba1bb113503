"""Token buckets every replica draws from (table ``rate_buckets``): a listener's limit
per address, the API's per key, held for the whole bot instead of per replica.

A bucket is one row per (scope, key): the tokens it had at ``at`` (the server's clock),
refilled at ``per_minute`` a minute up to ``burst`` as it is read. A replica takes a
*batch* in one statement (an UPSERT, one round trip): an eighth of what is left, at
least one, so while a key is far from its limit a replica asks once per many requests,
and near it once per request (the last tokens go one at a time, to whichever replica
asks first). What the statement grants is kept in the row (``granted``), so the answer
says both what was taken and what is left.

Its commit does not wait for the disk (``synchronous_commit = off`` for that
transaction): a server crash may forget the last few milliseconds of counts, which
only lets a few requests through again; production keeps the setting on for the rest.

A database error comes out as :class:`~thalos_bot.storage.database.DatabaseError`:
the caller falls back to counting on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from thalos_bot.storage.pg.database import PgDatabase, as_database_error

SPREAD = 8
"""A draw takes this fraction of the tokens left (one at least): the batch shrinks to
one request's worth as the bucket empties, so replicas holding tokens the others cannot
use can only make the first refusal come a token or so early per replica."""


@dataclass(frozen=True, slots=True)
class Draw:
    granted: int
    """Tokens taken for this replica (0: the bucket is empty)."""
    left: float
    """What the bucket holds after the draw (below 1: the next token is still coming)."""


def _level(tokens: str) -> str:
    """The bucket's tokens now, from ``tokens`` kept at ``b.at``."""
    return (
        f"least(%(burst)s::float8, {tokens} + extract(epoch FROM now() - b.at)::float8"
        " * %(rate)s::float8)"
    )


def _grant(level: str) -> str:
    return (
        f"CASE WHEN {level} >= 1 THEN least(floor({level}),"
        f" greatest(1, floor({level} / {SPREAD})))::int ELSE 0 END"
    )


_NEW = _grant("%(burst)s::float8")
_OLD = _grant(_level("b.tokens"))
DRAW = f"""
INSERT INTO rate_buckets AS b (scope, key, tokens, granted, at)
VALUES (%(scope)s, %(key)s, %(burst)s::float8 - {_NEW}, {_NEW}, now())
ON CONFLICT (scope, key) DO UPDATE SET
    granted = {_OLD},
    tokens = {_level("b.tokens")} - {_OLD},
    at = now()
RETURNING tokens, granted
"""  # noqa: S608 - built from constants above; every value is a parameter
PRUNE = f"""
DELETE FROM rate_buckets AS b
WHERE scope = %(scope)s AND {_level("b.tokens")} >= %(burst)s::float8
"""  # noqa: S608 - built from constants above; every value is a parameter


class PgRateBuckets:
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    async def draw(self, scope: str, key: str, per_minute: int, burst: int) -> Draw:
        """Take a batch of ``key``'s tokens in ``scope`` (refilled ``per_minute`` a
        minute, ``burst`` at most)."""
        params = {"scope": scope, "key": key, "burst": burst, "rate": per_minute / 60.0}
        # One round trip: BEGIN, the setting, the UPSERT and COMMIT sent together.
        with as_database_error(self._db.location):
            async with self._db.connection() as conn, conn.pipeline():
                async with conn.transaction():
                    # A count lost with the server's crash is harmless: not worth a flush.
                    await conn.execute("SET LOCAL synchronous_commit = off")
                    cursor = await conn.execute(DRAW, params)
                row = await cursor.fetchone()
        assert row is not None  # an UPSERT always returns its row
        return Draw(int(row["granted"]), float(row["tokens"]))

    async def prune(self, scope: str, per_minute: int, burst: int) -> int:
        """Forget the buckets of ``scope`` that are full again (as good as no row)."""
        params = {"scope": scope, "burst": burst, "rate": per_minute / 60.0}
        with as_database_error(self._db.location):
            async with self._db.transaction() as conn:
                cursor = await conn.execute(PRUNE, params)
        return cursor.rowcount
