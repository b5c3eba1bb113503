"""Embedding what is index-pending: ``thalos-bot memory reindex`` and the daemon's
background retry.

The daemon's :meth:`Reindexer.run` sleeps on an event the store sets when it marks a
record pending; a failing embedder is retried with exponential backoff
(:data:`FIRST_RETRY` doubling up to :data:`LAST_RETRY`), never polled.

Every pass keeps the ``memory-reindex`` row of ``task_progress`` up to date (see
:mod:`thalos_bot.storage.progress`: done/total after each batch, and how the pass
ended), and a pass of more than one batch logs ``memory_reindex_progress`` events with
done/total every tenth of the way or every 30 seconds. Each batch commits on its own,
so a pass that is stopped keeps what it embedded, and the next pass continues with the
pending rows.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import structlog

from thalos_bot.memory.embedding.base import EmbedderError
from thalos_bot.memory.shelf import quantize
from thalos_bot.memory.vectors import Key, VectorIndex, VectorMirror
from thalos_bot.storage.database import Database, fetch_all, fetch_one
from thalos_bot.storage.progress import MEMORY_REINDEX, ProgressBoard, State
from thalos_bot.telemetry.progress import Milestones

log = structlog.get_logger(__name__)

BATCH = 256
FIRST_RETRY = 5.0
LAST_RETRY = 600.0

ProgressHook = Callable[[int, int], None]
"""Hears ``(done, total)``: once with ``done == 0`` before the first batch, then after
each batch (``total`` grows when rows become pending meanwhile)."""


@dataclass(frozen=True, slots=True)
class ReindexReport:
    embedded: int
    pending: int
    """Still pending afterwards (0 unless the embedder failed part way)."""
    model: str


class ReindexLoop(ABC):
    """The passes and the background loop, whatever the engine; the engine's subclass
    reads and writes the pending rows."""

    def __init__(
        self,
        vectors: VectorMirror,
        board: ProgressBoard,
        *,
        batch: int = BATCH,
        first_retry: float = FIRST_RETRY,
        on_pass: Callable[[ReindexReport | None], None] | None = None,
    ) -> None:
        """``on_pass`` hears of each background pass (``None``: the embedder failed)."""
        self._vectors = vectors
        self._batch = batch
        self._first_retry = first_retry
        self._on_pass = on_pass
        self._wake = anyio.Event()
        self._board = board

    @abstractmethod
    async def _drop_all(self) -> None:
        """Drop every vector and mark every record pending (a full reindex)."""

    @abstractmethod
    async def _reconcile(self) -> None:
        """See :meth:`VectorIndex.reconcile`."""

    @abstractmethod
    async def pending_count(self) -> int: ...

    @abstractmethod
    async def _pending_after(self, after: int) -> int: ...

    @abstractmethod
    async def _one_batch(self, after: int) -> tuple[int, int, int] | None:
        """Embed the next batch past ``after``: ``(embedded, rows seen, last seq)``;
        ``None`` when none is left."""

    def wake(self) -> None:
        """Something became pending (the store's ``on_pending``)."""
        self._wake.set()

    async def reindex(
        self,
        *,
        pending_only: bool = True,
        reconcile: bool = True,
        on_progress: ProgressHook | None = None,
        kind: str | None = None,
    ) -> ReindexReport:
        """Embed every pending record (``pending_only=False``: every record, after
        dropping all vectors). ``reconcile`` first drops another model's vectors and
        marks what lacks one pending (see :meth:`VectorIndex.reconcile`). Raises
        :class:`EmbedderError` when the embedder fails; what was embedded stays, and
        so it does when the pass is cancelled. ``kind`` is what the progress row calls
        the pass (default ``full`` or ``pending``; a full reindex resumed over its
        pending rows is still ``full``)."""
        if not self._vectors.available:
            raise EmbedderError("no embedder is configured")
        if not pending_only:
            await self._drop_all()
            self._vectors.forget_mirror()
        elif reconcile:
            await self._reconcile()
        total = await self.pending_count()
        if total == 0:  # nothing to do, nothing to record (the row keeps the last pass)
            if on_progress is not None:
                on_progress(0, 0)
            return ReindexReport(0, 0, self._vectors.model)
        await self._board.begin(total, kind or ("pending" if pending_only else "full"))
        milestones = Milestones(total)
        if on_progress is not None:
            on_progress(0, total)
        embedded = done = after = 0
        try:
            while (batch := await self._one_batch(after)) is not None:
                added, seen, after = batch
                embedded += added
                done += seen
                total = done + await self._pending_after(after)
                await self._board.advance(done, total)
                if on_progress is not None:
                    on_progress(done, total)
                due = milestones.update(done, total)
                if due is not None and total > self._batch:
                    log.info(
                        "memory_reindex_progress",
                        done=done,
                        total=total,
                        rate=round(due.rate or 0.0, 1),
                        eta_seconds=None if due.eta is None else round(due.eta),
                    )
        except BaseException as exc:
            state: State = "failed" if isinstance(exc, Exception) else "interrupted"
            with anyio.CancelScope(shield=True):
                await self._board.end(state, done, total)
            raise
        await self._board.end("done", done, total)
        log.info("memory-reindexed", embedded=embedded, model=self._vectors.model)
        return ReindexReport(embedded, await self.pending_count(), self._vectors.model)

    async def run(self) -> None:
        """The daemon's background task: reconcile once, then embed whatever becomes
        pending, backing off while the embedder fails. Runs until cancelled."""
        if not self._vectors.available:
            return
        await self._reconcile()
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


class Reindexer(ReindexLoop):
    """Embeds the pending records of the SQLite file."""

    def __init__(
        self,
        db: Database,
        vectors: VectorIndex,
        *,
        batch: int = BATCH,
        first_retry: float = FIRST_RETRY,
        on_pass: Callable[[ReindexReport | None], None] | None = None,
    ) -> None:
        super().__init__(
            vectors,
            ProgressBoard(db, MEMORY_REINDEX),
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
                "INSERT OR IGNORE INTO memory_index_pending (seq) SELECT seq FROM memories"
            )

    async def _reconcile(self) -> None:
        await self._index.reconcile(self._db)

    async def pending_count(self) -> int:
        async with self._db.read() as conn:
            row = await fetch_one(conn, "SELECT count(*) FROM memory_index_pending")
        return int(row[0]) if row is not None else 0

    async def _pending_after(self, after: int) -> int:
        async with self._db.read() as conn:
            row = await fetch_one(
                conn, "SELECT count(*) FROM memory_index_pending WHERE seq > ?", (after,)
            )
        return int(row[0]) if row is not None else 0

    async def _one_batch(self, after: int) -> tuple[int, int, int] | None:
        """Embed the next batch past ``after``: ``(embedded, rows seen, last seq)``;
        ``None`` when none is left."""
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT m.seq, m.owner, m.agent, m.text FROM memory_index_pending AS p"
                " JOIN memories AS m ON m.seq = p.seq WHERE p.seq > ? ORDER BY p.seq LIMIT ?",
                (after, self._batch),
            )
        if not rows:
            return None
        texts = [str(r["text"]) for r in rows]
        codes = quantize(await self._vectors.embedder.embed(texts))
        added: list[tuple[Key, int, int]] = []
        async with self._db.transaction() as conn:
            for i, row in enumerate(rows):
                seq = int(row["seq"])
                current = await fetch_one(conn, "SELECT text FROM memories WHERE seq = ?", (seq,))
                if current is None or current[0] != texts[i]:
                    continue  # deleted or rewritten meanwhile (a rewrite embeds itself)
                await self._index.write(conn, seq, codes[i])
                added.append(((str(row["owner"]), row["agent"]), seq, i))
        for key, seq, i in added:
            self._vectors.added(key, seq, codes[i])
        return len(added), len(rows), int(rows[-1]["seq"])
