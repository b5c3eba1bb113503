"""Embedding what is index-pending: ``thalos-bot memory reindex`` and the daemon's
background retry.

The daemon's :meth:`Reindexer.run` sleeps on an event the store sets when it marks a
record pending; a failing embedder is retried with exponential backoff
(:data:`FIRST_RETRY` doubling up to :data:`LAST_RETRY`), never polled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import anyio
import structlog

from thalos_bot.memory.embedding.base import EmbedderError
from thalos_bot.memory.shelf import quantize
from thalos_bot.memory.vectors import Key, VectorIndex
from thalos_bot.storage.database import Database, fetch_all, fetch_one

log = structlog.get_logger(__name__)

BATCH = 256
FIRST_RETRY = 5.0
LAST_RETRY = 600.0


@dataclass(frozen=True, slots=True)
class ReindexReport:
    embedded: int
    pending: int
    """Still pending afterwards (0 unless the embedder failed part way)."""
    model: str


class Reindexer:
    def __init__(
        self,
        db: Database,
        vectors: VectorIndex,
        *,
        batch: int = BATCH,
        first_retry: float = FIRST_RETRY,
        on_pass: Callable[[ReindexReport | None], None] | None = None,
    ) -> None:
        """``on_pass`` hears of each background pass (``None``: the embedder failed)."""
        self._db = db
        self._vectors = vectors
        self._batch = batch
        self._first_retry = first_retry
        self._on_pass = on_pass
        self._wake = anyio.Event()

    def wake(self) -> None:
        """Something became pending (the store's ``on_pending``)."""
        self._wake.set()

    async def reindex(self, *, pending_only: bool = True, reconcile: bool = True) -> ReindexReport:
        """Embed every pending record (``pending_only=False``: every record, after
        dropping all vectors). ``reconcile`` first drops another model's vectors and
        marks what lacks one pending (see :meth:`VectorIndex.reconcile`). Raises
        :class:`EmbedderError` when the embedder fails; what was embedded stays."""
        if not self._vectors.available:
            raise EmbedderError("no embedder is configured")
        if not pending_only:
            async with self._db.transaction() as conn:
                await conn.execute("DELETE FROM memory_vectors")
                await conn.execute(
                    "INSERT OR IGNORE INTO memory_index_pending (seq) SELECT seq FROM memories"
                )
            self._vectors.forget_mirror()
        elif reconcile:
            await self._vectors.reconcile(self._db)
        embedded = 0
        after = 0
        while True:
            done, after = await self._one_batch(after)
            if done < 0:
                break
            embedded += done
        log.info("memory-reindexed", embedded=embedded, model=self._vectors.model)
        return ReindexReport(embedded, await self.pending_count(), self._vectors.model)

    async def pending_count(self) -> int:
        async with self._db.read() as conn:
            row = await fetch_one(conn, "SELECT count(*) FROM memory_index_pending")
        return int(row[0]) if row is not None else 0

    async def _one_batch(self, after: int) -> tuple[int, int]:
        """Embed the next batch past ``after``; ``(-1, after)`` when none is left."""
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT m.seq, m.owner, m.agent, m.text FROM memory_index_pending AS p"
                " JOIN memories AS m ON m.seq = p.seq WHERE p.seq > ? ORDER BY p.seq LIMIT ?",
                (after, self._batch),
            )
        if not rows:
            return -1, after
        texts = [str(r["text"]) for r in rows]
        codes = quantize(await self._vectors.embedder.embed(texts))
        added: list[tuple[Key, int, int]] = []
        async with self._db.transaction() as conn:
            for i, row in enumerate(rows):
                seq = int(row["seq"])
                current = await fetch_one(conn, "SELECT text FROM memories WHERE seq = ?", (seq,))
                if current is None or current[0] != texts[i]:
                    continue  # deleted or rewritten meanwhile (a rewrite embeds itself)
                await self._vectors.write(conn, seq, codes[i])
                added.append(((str(row["owner"]), row["agent"]), seq, i))
        for key, seq, i in added:
            self._vectors.added(key, seq, codes[i])
        return len(added), int(rows[-1]["seq"])

    async def run(self) -> None:
        """The daemon's background task: reconcile once, then embed whatever becomes
        pending, backing off while the embedder fails. Runs until cancelled."""
        if not self._vectors.available:
            return
        await self._vectors.reconcile(self._db)
        self._wake.set()
        delay = self._first_retry
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            try:
                report = await self.reindex(pending_only=True, reconcile=False)
            except EmbedderError as exc:
                log.warning("memory-reindex-failed", reason=str(exc), retry_in=delay)
                if self._on_pass is not None:
                    self._on_pass(None)
                await anyio.sleep(delay)
                self._wake.set()
                delay = min(delay * 2, LAST_RETRY)
                continue
            delay = self._first_retry
            if self._on_pass is not None:
                self._on_pass(report)
            if report.embedded:
                log.info("memory-index-caught-up", embedded=report.embedded)
