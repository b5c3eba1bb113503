"""Embedding what is index-pending in the PostgreSQL memory tables (the loop and its
progress row are :class:`~thalos_bot.memory.reindex.ReindexLoop`'s; the progress row is
kept in the replica's own SQLite file)."""

from __future__ import annotations

from collections.abc import Callable

from thalos_bot.memory.reindex import BATCH, FIRST_RETRY, ReindexLoop, ReindexReport
from thalos_bot.memory.shelf import quantize
from thalos_bot.memory.vectors import Key
from thalos_bot.storage.database import Database
from thalos_bot.storage.pg.database import PgDatabase, fetch_all, fetch_one
from thalos_bot.storage.pg.memory_vectors import PgVectorIndex, bump
from thalos_bot.storage.progress import MEMORY_REINDEX, ProgressBoard


class PgReindexer(ReindexLoop):
    def __init__(
        self,
        db: PgDatabase,
        vectors: PgVectorIndex,
        local: Database,
        *,
        batch: int = BATCH,
        first_retry: float = FIRST_RETRY,
        on_pass: Callable[[ReindexReport | None], None] | None = None,
    ) -> None:
        super().__init__(
            vectors,
            ProgressBoard(local, MEMORY_REINDEX),
            batch=batch,
            first_retry=first_retry,
            on_pass=on_pass,
        )
        self._db = db
        self._index = vectors

    async def _drop_all(self) -> None:
        async with self._db.transaction() as conn:
            await conn.execute("DELETE FROM memory_vectors")
            await conn.execute(
                "INSERT INTO memory_index_pending (seq) SELECT seq FROM memories"
                " ON CONFLICT DO NOTHING"
            )
            await bump(conn)

    async def _reconcile(self) -> None:
        await self._index.reconcile(self._db)

    async def pending_count(self) -> int:
        async with self._db.read() as conn:
            row = await fetch_one(conn, "SELECT count(*) AS n FROM memory_index_pending")
        return int(row["n"]) if row is not None else 0

    async def _pending_after(self, after: int) -> int:
        async with self._db.read() as conn:
            row = await fetch_one(
                conn,
                "SELECT count(*) AS n FROM memory_index_pending WHERE seq > %s",
                (after,),
            )
        return int(row["n"]) if row is not None else 0

    async def _one_batch(self, after: int) -> tuple[int, int, int] | None:
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT m.seq, m.owner, m.agent, m.text FROM memory_index_pending AS p"
                " JOIN memories AS m ON m.seq = p.seq WHERE p.seq > %s ORDER BY p.seq"
                " LIMIT %s",
                (after, self._batch),
            )
        if not rows:
            return None
        texts = [str(r["text"]) for r in rows]
        codes = quantize(await self._index.embedder.embed(texts))
        added: list[tuple[Key, int, int]] = []
        async with self._db.transaction() as conn:
            for i, row in enumerate(rows):
                seq = int(row["seq"])
                current = await fetch_one(
                    conn, "SELECT text FROM memories WHERE seq = %s FOR UPDATE", (seq,)
                )
                if current is None or current["text"] != texts[i]:
                    continue  # deleted or rewritten meanwhile (a rewrite embeds itself)
                await self._index.write(conn, seq, codes[i])
                added.append(((str(row["owner"]), row["agent"]), seq, i))
            after_generation = await bump(conn)
        self._index.wrote(after_generation - 1, after_generation)
        for key, seq, i in added:
            self._index.added(key, seq, codes[i])
        return len(added), len(rows), int(rows[-1]["seq"])
