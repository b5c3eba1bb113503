"""The vector index: one vector per record in ``memory_vectors`` (int8 codes in a BLOB,
tagged with the embedder's model), mirrored in memory per owner and agent for the scan.

A record without a vector of the current model is *index-pending*: it is listed in
``memory_index_pending`` and still found by BM25, and :class:`~thalos_bot.memory.
reindex.Reindexer` embeds it later. Vectors of another model are never searched:
:meth:`VectorIndex.reconcile` drops them when the model changes and marks every record
pending, so two models' vectors are never mixed.

The mirror is updated only after a transaction commits (the store calls :meth:`added`
and :meth:`removed`), and loaded lazily per scope key on the first search that needs it.
Another process writing the same file (``thalos-bot memory add``, ``reindex`` or
``forget`` next to a running daemon) is noticed through ``PRAGMA data_version``, which
changes on a connection only when some *other* connection committed: the mirror is then
dropped and reloaded, so the daemon finds what the command wrote without a restart.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import aiosqlite
import numpy as np
import structlog

from thalos_bot.memory.embedding.base import Embedder, EmbedderError, Vectors
from thalos_bot.memory.index import Hit, Scope
from thalos_bot.memory.shelf import Codes, Shelf, quantize
from thalos_bot.storage.database import Database, fetch_all, fetch_one

log = structlog.get_logger(__name__)

Key = tuple[str, str | None]
"""(owner, agent) of the records a shelf holds (``None``: shared across agents)."""


def scope_keys(scope: Scope) -> list[Key]:
    if scope.exact_agent or scope.agent is None:
        return [(owner, scope.agent) for owner in scope.owners]
    return [key for owner in scope.owners for key in ((owner, None), (owner, scope.agent))]


@dataclass(frozen=True, slots=True)
class Embedded:
    """A text's vector, or why there is none."""

    codes: Codes | None
    vector: Vectors | None
    failed: bool
    """The embedder was asked and failed (the record becomes index-pending)."""


class VectorMirror:
    """The part of a vector index that is the same on every engine: the embedder and
    the in-memory shelves per scope key, updated after each commit."""

    def __init__(self, embedder: Embedder, *, min_similarity: float = 0.15) -> None:
        self.embedder = embedder
        self.min_similarity = min_similarity
        self._shelves: dict[Key, Shelf] = {}
        self._key_of: dict[int, Key] = {}

    @property
    def model(self) -> str:
        return self.embedder.model

    @property
    def available(self) -> bool:
        return self.embedder.available

    @property
    def mirror_bytes(self) -> int:
        return sum(shelf.nbytes for shelf in self._shelves.values())

    async def embed(self, text: str) -> Embedded:
        """The vector of ``text``; a failing embedder is logged, never raised."""
        if not self.available:
            return Embedded(None, None, failed=False)
        try:
            vector = await self.embedder.embed([text])
        except EmbedderError as exc:
            log.warning("memory-embed-failed", model=self.model, reason=str(exc))
            return Embedded(None, None, failed=True)
        return Embedded(quantize(vector), vector, failed=False)

    def closest(
        self, shelves: Sequence[Shelf], vector: Vectors, limit: int, floor: float
    ) -> list[Hit]:
        """The ``limit`` best of ``shelves`` for ``vector``, at least ``floor`` similar."""
        found: list[tuple[int, float]] = []
        for shelf in shelves:
            found += shelf.search(vector, limit)
        found.sort(key=lambda pair: -pair[1])
        return [Hit(seq, score) for seq, score in found[:limit] if score >= floor]

    def cached(self, key: Key, dimensions: int) -> Shelf | None:
        shelf = self._shelves.get(key)
        return shelf if shelf is not None and shelf.dimensions == dimensions else None

    def load(self, key: Key, dimensions: int, rows: Sequence[tuple[int, bytes]]) -> Shelf:
        """A shelf for ``key`` from ``(seq, codes)`` rows read from the table."""
        shelf = Shelf(dimensions, capacity=max(64, len(rows)))
        seqs = np.fromiter((seq for seq, _ in rows), dtype=np.int64, count=len(rows))
        if rows:
            codes = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.int8)
            shelf.put(seqs, codes.reshape(len(rows), dimensions))
        self._shelves[key] = shelf
        for seq in seqs.tolist():
            self._key_of[seq] = key
        return shelf

    # -- the mirror (after commit) --------------------------------------------------

    def added(self, key: Key, seq: int, codes: Codes) -> None:
        shelf = self._shelves.get(key)
        if shelf is None or shelf.dimensions != codes.shape[-1]:
            return  # loaded from the table, vector included, when first searched
        shelf.put(np.array([seq], dtype=np.int64), codes.reshape(1, -1))
        self._key_of[seq] = key

    def removed(self, seqs: Iterable[int]) -> None:
        for seq in seqs:
            key = self._key_of.pop(seq, None)
            if key is not None and key in self._shelves:
                self._shelves[key].remove(seq)

    def forget_mirror(self) -> None:
        self._shelves.clear()
        self._key_of.clear()


class VectorIndex(VectorMirror):
    """Vectors in the SQLite file."""

    def __init__(self, embedder: Embedder, *, min_similarity: float = 0.15) -> None:
        super().__init__(embedder, min_similarity=min_similarity)
        self._data_version: int | None = None
        """``PRAGMA data_version`` when the mirror was last known to match the file."""

    # -- searching ------------------------------------------------------------------

    async def search(
        self,
        conn: aiosqlite.Connection,
        vector: Vectors,
        scope: Scope,
        limit: int,
        min_similarity: float | None = None,
    ) -> list[Hit]:
        """The ``limit`` records of ``scope`` closest to ``vector``, at least
        ``min_similarity`` (default :attr:`min_similarity`) similar."""
        floor = self.min_similarity if min_similarity is None else min_similarity
        await self._notice_other_writers(conn)
        dimensions = int(vector.shape[-1])
        shelves = [await self._shelf(conn, key, dimensions) for key in scope_keys(scope)]
        return self.closest(shelves, vector, limit, floor)

    async def _notice_other_writers(self, conn: aiosqlite.Connection) -> None:
        row = await fetch_one(conn, "PRAGMA data_version")
        version = int(row[0]) if row is not None else None
        if version != self._data_version:
            if self._data_version is not None and self._shelves:
                log.info("memory-mirror-reloaded", reason="another process wrote the file")
                self.forget_mirror()
            self._data_version = version

    async def _shelf(self, conn: aiosqlite.Connection, key: Key, dimensions: int) -> Shelf:
        shelf = self.cached(key, dimensions)
        if shelf is not None:
            return shelf
        owner, agent = key
        rows = await fetch_all(
            conn,
            "SELECT v.seq, v.vector FROM memory_vectors AS v JOIN memories AS m"
            " ON m.seq = v.seq WHERE m.owner = ? AND m.agent IS ? AND m.archived = 0"
            " AND v.model = ?",
            (owner, agent, self.model),
        )
        return self.load(key, dimensions, [(int(r[0]), bytes(r[1])) for r in rows])

    # -- writing (inside the caller's transaction) ------------------------------------

    async def write(self, conn: aiosqlite.Connection, seq: int, codes: Codes) -> None:
        await conn.execute(
            "INSERT INTO memory_vectors (seq, model, vector) VALUES (?, ?, ?)"
            " ON CONFLICT (seq) DO UPDATE SET model = excluded.model, vector = excluded.vector",
            (seq, self.model, codes.reshape(-1).tobytes()),
        )
        await conn.execute("DELETE FROM memory_index_pending WHERE seq = ?", (seq,))

    async def mark_pending(self, conn: aiosqlite.Connection, seq: int) -> None:
        """``seq`` has no (current) vector: its old one, if any, no longer matches."""
        await conn.execute("DELETE FROM memory_vectors WHERE seq = ?", (seq,))
        await conn.execute("INSERT OR IGNORE INTO memory_index_pending (seq) VALUES (?)", (seq,))

    # -- housekeeping ---------------------------------------------------------------

    async def reconcile(self, db: Database) -> int:
        """Drop vectors of any other model and mark every record without a vector of
        this one pending. Returns how many records are pending."""
        if not self.available:
            return 0
        async with db.transaction() as conn:
            cursor = await conn.execute(
                "DELETE FROM memory_vectors WHERE model <> ?", (self.model,)
            )
            if cursor.rowcount:
                log.info("memory-model-changed", model=self.model, dropped=cursor.rowcount)
            await conn.execute(
                "INSERT OR IGNORE INTO memory_index_pending (seq) SELECT m.seq FROM memories"
                " AS m WHERE NOT EXISTS (SELECT 1 FROM memory_vectors AS v WHERE v.seq = m.seq)"
            )
            row = await fetch_one(conn, "SELECT count(*) FROM memory_index_pending")
        self.forget_mirror()
        return int(row[0]) if row is not None else 0

    async def pending(self, conn: aiosqlite.Connection, limit: int) -> Sequence[tuple[int, str]]:
        rows = await fetch_all(
            conn,
            "SELECT m.seq, m.text FROM memory_index_pending AS p JOIN memories AS m"
            " ON m.seq = p.seq ORDER BY p.seq LIMIT ?",
            (limit,),
        )
        return [(int(r[0]), str(r[1])) for r in rows]
