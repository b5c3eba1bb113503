"""The vector index on PostgreSQL: int8 codes as ``bytea`` in ``memory_vectors``, and
the same in-memory scan as on SQLite (:class:`~thalos_bot.memory.vectors.VectorMirror`).

Each replica holds its own mirror. Every write to the memory tables raises the one
row of ``memory_generation`` in the same transaction (:func:`bump`); a search that
finds the counter moved past what this replica last wrote or read drops its mirror and
reloads it, so a record another replica (or ``thalos-bot memory``) wrote is found
without a restart. The row lock of that counter also orders the writers.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from thalos_bot.memory.embedding.base import Embedder, Vectors
from thalos_bot.memory.index import Hit, Scope
from thalos_bot.memory.shelf import Codes, Shelf
from thalos_bot.memory.vectors import Key, VectorMirror, scope_keys
from thalos_bot.storage.pg.database import Connection, PgDatabase, fetch_all, fetch_one

log = structlog.get_logger(__name__)


async def bump(conn: Connection) -> int:
    """Raise the memory generation inside the caller's write transaction."""
    row = await fetch_one(conn, "UPDATE memory_generation SET value = value + 1 RETURNING value")
    assert row is not None  # the migration inserts the row
    return int(row["value"])


class PgVectorIndex(VectorMirror):
    def __init__(self, embedder: Embedder, *, min_similarity: float = 0.15) -> None:
        super().__init__(embedder, min_similarity=min_similarity)
        self._generation: int | None = None
        """The generation the mirror matches (None: unknown, reload when searched)."""

    def wrote(self, before: int, after: int) -> None:
        """This replica's commit raised the generation from ``before`` to ``after``:
        the mirror still matches when nobody else wrote in between."""
        if self._generation is not None and before == self._generation and after == before + 1:
            self._generation = after
        else:
            self._generation = None

    async def search(
        self,
        conn: Connection,
        vector: Vectors,
        scope: Scope,
        limit: int,
        min_similarity: float | None = None,
    ) -> list[Hit]:
        floor = self.min_similarity if min_similarity is None else min_similarity
        await self._notice_other_writers(conn)
        dimensions = int(vector.shape[-1])
        shelves = [await self._shelf(conn, key, dimensions) for key in scope_keys(scope)]
        return self.closest(shelves, vector, limit, floor)

    async def _notice_other_writers(self, conn: Connection) -> None:
        row = await fetch_one(conn, "SELECT value FROM memory_generation")
        current = int(row["value"]) if row is not None else 0
        if current != self._generation:
            if self._generation is not None and self._shelves:
                log.info("memory-mirror-reloaded", reason="another replica wrote")
            self.forget_mirror()
            self._generation = current

    async def _shelf(self, conn: Connection, key: Key, dimensions: int) -> Shelf:
        shelf = self.cached(key, dimensions)
        if shelf is not None:
            return shelf
        owner, agent = key
        rows = await fetch_all(
            conn,
            "SELECT v.seq, v.vector FROM memory_vectors AS v JOIN memories AS m"
            " ON m.seq = v.seq WHERE m.owner = %s AND m.agent IS NOT DISTINCT FROM %s"
            " AND NOT m.archived AND v.model = %s",
            (owner, agent, self.model),
        )
        return self.load(key, dimensions, [(int(r["seq"]), bytes(r["vector"])) for r in rows])

    # -- writing (inside the caller's transaction) ------------------------------------

    async def write(self, conn: Connection, seq: int, codes: Codes) -> None:
        await conn.execute(
            "INSERT INTO memory_vectors (seq, model, vector) VALUES (%s, %s, %s)"
            " ON CONFLICT (seq) DO UPDATE SET model = excluded.model, vector = excluded.vector",
            (seq, self.model, codes.reshape(-1).tobytes()),
        )
        await conn.execute("DELETE FROM memory_index_pending WHERE seq = %s", (seq,))

    async def mark_pending(self, conn: Connection, seq: int) -> None:
        await conn.execute("DELETE FROM memory_vectors WHERE seq = %s", (seq,))
        await conn.execute(
            "INSERT INTO memory_index_pending (seq) VALUES (%s) ON CONFLICT DO NOTHING", (seq,)
        )

    # -- housekeeping ---------------------------------------------------------------

    async def reconcile(self, db: PgDatabase) -> int:
        """As on SQLite: drop another model's vectors, mark what lacks one pending."""
        if not self.available:
            return 0
        async with db.transaction() as conn:
            cursor = await conn.execute(
                "DELETE FROM memory_vectors WHERE model <> %s", (self.model,)
            )
            if cursor.rowcount:
                log.info("memory-model-changed", model=self.model, dropped=cursor.rowcount)
            await conn.execute(
                "INSERT INTO memory_index_pending (seq) SELECT m.seq FROM memories AS m"
                " WHERE NOT EXISTS (SELECT 1 FROM memory_vectors AS v WHERE v.seq = m.seq)"
                " ON CONFLICT DO NOTHING"
            )
            await bump(conn)
            row = await fetch_one(conn, "SELECT count(*) AS n FROM memory_index_pending")
        self.forget_mirror()
        self._generation = None
        return int(row["n"]) if row is not None else 0

    async def pending(self, conn: Connection, limit: int) -> Sequence[tuple[int, str]]:
        rows = await fetch_all(
            conn,
            "SELECT m.seq, m.text FROM memory_index_pending AS p JOIN memories AS m"
            " ON m.seq = p.seq ORDER BY p.seq LIMIT %s",
            (limit,),
        )
        return [(int(r["seq"]), str(r["text"])) for r in rows]
