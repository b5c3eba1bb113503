"""Long-term memory records in the shared SQLite database.

Every method takes the owner explicitly; callers pass the turn's security context id
and nothing else (the tools and auto-recall do; only the operator CLI may name any
owner). A record never leaves its owner's scope: every query filters on ``owner``.
"""

from __future__ import annotations

import dataclasses
import secrets
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

import aiosqlite
import anyio
import structlog

from thalos_bot.config.memory import CONTAINMENT_THRESHOLD, DEDUPE_THRESHOLD
from thalos_bot.domain.clock import utc_now
from thalos_bot.memory.fusion import DEFAULT_FUSION, Fusion, Ranking, fuse
from thalos_bot.memory.index import Fts5Index, Hit, MemoryIndex, Scope
from thalos_bot.memory.records import (
    MemoryRecord,
    NewMemory,
    check_owner,
    merge_tags,
    new_memory,
)
from thalos_bot.memory.rows import (
    SEEN_BY,
    Row,
    by_seq,
    listing_where,
    one,
    one_row,
    tags_json,
    to_record,
)
from thalos_bot.memory.text import Resemblance, content_words, resemblance
from thalos_bot.memory.vectors import Embedded, VectorIndex
from thalos_bot.storage.database import Database, encode_time, fetch_all, fetch_one

log = structlog.get_logger(__name__)

T = TypeVar("T")

DEDUPE_CANDIDATES = 20
DEDUPE_SIMILARITY = 0.95
"""Cosine at or above which a new memory may repeat an old one (with the guards of
:func:`same_meaning`): averaged word vectors cannot tell "Monday" from "Tuesday" or
"Alice reports to Bob" from "Bob reports to Alice", so the vector never decides alone."""
VECTOR_DEDUPE_JACCARD = 0.5
SCORE_DIGITS = 3
"""Scores equal to this many significant digits tie; importance then recency decide."""


@dataclass(frozen=True, slots=True)
class Stored:
    record: MemoryRecord
    deduped: bool
    """True when an existing record was refreshed instead of a new one inserted."""
    resemblance: Resemblance | None = None
    index_pending: bool = False
    """The embedder failed: the record is stored and found by keywords, and waits for
    its vector (``memory-index-pending``)."""


@dataclass(frozen=True, slots=True)
class Recalled:
    record: MemoryRecord
    score: float


class MemoryStore:
    """Remember, recall, list, archive and hard-delete memories."""

    def __init__(
        self,
        db: Database,
        *,
        index: MemoryIndex | None = None,
        clock: Callable[[], datetime] = utc_now,
        dedupe_threshold: float = DEDUPE_THRESHOLD,
        containment_threshold: float = CONTAINMENT_THRESHOLD,
        vectors: VectorIndex | None = None,
        dedupe_similarity: float = DEDUPE_SIMILARITY,
        on_pending: Callable[[], None] | None = None,
        fusion: Fusion = DEFAULT_FUSION,
    ) -> None:
        self._db = db
        self.index: MemoryIndex = index or Fts5Index()
        self.vectors = vectors
        """Recall by meaning as well (``None``: BM25 alone)."""
        self.dedupe_similarity = dedupe_similarity
        self._on_pending = on_pending
        self.fusion = fusion
        self._clock = clock
        self.dedupe_threshold = dedupe_threshold
        self.containment_threshold = containment_threshold

    @property
    def database(self) -> Database:
        return self._db

    # -- writing --------------------------------------------------------------------

    async def remember(
        self,
        owner: str,
        text: str,
        *,
        kind: str | None = None,
        tags: Iterable[str] = (),
        importance: int | None = None,
        agent: str | None = None,
    ) -> Stored:
        """Store a memory, or refresh the record it repeats (same owner and agent scope).

        Raises :class:`~thalos_bot.memory.records.InvalidMemoryError` for a bad memory.
        """
        memory = new_memory(owner, text, kind=kind, tags=tags, importance=importance, agent=agent)
        return await self.store(memory)

    async def store(self, memory: NewMemory, *, dedupe: bool = True) -> Stored:
        embedded = await self._embed(memory.text)
        now = self._clock()
        async with self._db.transaction() as conn:
            match = await self._duplicate_of(conn, memory, embedded) if dedupe else None
            if match is not None:
                old, similar = match
                record = await self._refresh(conn, old, memory, similar, now)
                seq, written = old.seq, record.text != old.text
                stored = Stored(record, deduped=True, resemblance=similar)
            else:
                row = await self._insert(conn, memory, now)
                seq, written, stored = row.seq, True, Stored(row.record, deduped=False)
            pending = written and await self._index_vector(conn, seq, embedded)
        if written and embedded.codes is not None and self.vectors is not None:
            self.vectors.added((memory.owner, memory.agent), seq, embedded.codes)
        log.info(
            "memory-stored",
            id=stored.record.id,
            owner=memory.owner,
            kind=stored.record.kind,
            deduped=stored.deduped,
        )
        if pending:
            log.warning("memory-index-pending", id=stored.record.id, owner=memory.owner)
            if self._on_pending is not None:
                self._on_pending()
            stored = dataclasses.replace(stored, index_pending=True)
        return stored

    async def _embed(self, text: str) -> Embedded:
        if self.vectors is None:
            return Embedded(None, None, failed=False)
        return await self.vectors.embed(text)

    async def _index_vector(self, conn: aiosqlite.Connection, seq: int, embedded: Embedded) -> bool:
        """Write the vector, or mark the record pending; True when it is pending."""
        if self.vectors is None or not self.vectors.available:
            return False
        if embedded.codes is None:
            await self.vectors.mark_pending(conn, seq)
            return True
        await self.vectors.write(conn, seq, embedded.codes)
        return False

    async def insert_many(self, memories: Iterable[NewMemory]) -> int:
        """Insert without dedupe, in one transaction (imports and benchmarks). The new
        records are index-pending: :class:`~thalos_bot.memory.reindex.Reindexer` embeds
        them in batches."""
        now = self._clock()
        count = 0
        async with self._db.transaction() as conn:
            for memory in memories:
                row = await self._insert(conn, memory, now)
                if self.vectors is not None and self.vectors.available:
                    await self.vectors.mark_pending(conn, row.seq)
                count += 1
        log.info("memory-imported", count=count)
        if count and self.vectors is not None and self.vectors.available and self._on_pending:
            self._on_pending()
        return count

    async def _duplicate_of(
        self, conn: aiosqlite.Connection, memory: NewMemory, embedded: Embedded
    ) -> tuple[Row, Resemblance] | None:
        scope = Scope((memory.owner,), memory.agent, exact_agent=True)
        hits = await self.index.search(conn, memory.text, scope, DEDUPE_CANDIDATES)
        cosine: dict[int, float] = {}
        if embedded.vector is not None and self.vectors is not None:
            near = await self.vectors.search(
                conn, embedded.vector, scope, DEDUPE_CANDIDATES, self.dedupe_similarity
            )
            cosine = {h.seq: h.score for h in near}
        seqs = list(dict.fromkeys([*(h.seq for h in hits), *cosine]))
        best: tuple[Row, Resemblance] | None = None
        for seq, record in (await by_seq(conn, seqs)).items():
            similar = resemblance(memory.text, record.text)
            if not (
                similar.is_duplicate(self.dedupe_threshold, self.containment_threshold)
                or (seq in cosine and same_meaning(memory.text, record.text, similar))
            ):
                continue
            if best is None or similar.score > best[1].score:
                best = (Row(seq, record), similar)
        return best

    async def _refresh(
        self,
        conn: aiosqlite.Connection,
        old: Row,
        new: NewMemory,
        similar: Resemblance,
        now: datetime,
    ) -> MemoryRecord:
        # A restatement replaces the old wording (the newest is the most current); when
        # one merely contains the other, the fuller text is kept.
        near_equal = similar.jaccard >= self.dedupe_threshold
        text = new.text if near_equal or similar.new_is_larger else old.text
        kind = new.kind if old.record.kind == "note" else old.record.kind
        tags = merge_tags(old.record.tags, new.tags)
        importance = max(old.record.importance, new.importance)
        await conn.execute(
            "UPDATE memories SET text = ?, kind = ?, tags = ?, importance = ?, updated_at = ?"
            " WHERE seq = ?",
            (text, kind, tags_json(tags), importance, encode_time(now), old.seq),
        )
        if text != old.text:
            await self.index.written(conn, old.seq, text)
        record = await one(conn, "seq = ?", (old.seq,))
        assert record is not None
        return record

    async def _insert(self, conn: aiosqlite.Connection, memory: NewMemory, now: datetime) -> Row:
        check_owner(memory.owner)
        stamp = encode_time(now)
        while True:
            record_id = "m-" + secrets.token_hex(6)
            if await fetch_one(conn, "SELECT 1 FROM memories WHERE id = ?", (record_id,)) is None:
                break
        cursor = await conn.execute(
            "INSERT INTO memories (id, owner, agent, kind, text, tags, importance,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record_id,
                memory.owner,
                memory.agent,
                memory.kind,
                memory.text,
                tags_json(memory.tags),
                memory.importance,
                stamp,
                stamp,
            ),
        )
        seq = cursor.lastrowid
        assert seq is not None
        await self.index.written(conn, seq, memory.text)
        return Row(
            seq,
            MemoryRecord(
                id=record_id,
                owner=memory.owner,
                agent=memory.agent,
                kind=memory.kind,
                text=memory.text,
                tags=memory.tags,
                importance=memory.importance,
                created_at=now,
                updated_at=now,
                last_recalled_at=None,
                archived=False,
            ),
        )

    # -- recall ---------------------------------------------------------------------

    async def recall(
        self,
        owners: Sequence[str],
        query: str,
        *,
        agent: str | None = None,
        top_k: int = 5,
        min_score: float = 0.0,
        char_budget: int | None = None,
        touch: bool = True,
        ranking: Ranking = "hybrid",
    ) -> list[Recalled]:
        """Records of ``owners`` relevant to ``query``: by score, then importance, then
        recency; at most ``top_k``, and (when given) at most ``char_budget`` characters
        of text in all. ``touch`` stamps ``last_recalled_at`` on what is returned.

        With a vector index the BM25 and vector rankings are fused (:func:`fuse`);
        without one, or when embedding the query fails, BM25 ranks alone. ``ranking``
        picks one of them (measurements)."""
        owners = tuple(dict.fromkeys(check_owner(o) for o in owners))
        if top_k <= 0 or not query.strip():
            return []
        scope = Scope(owners, agent)
        depth = max(top_k * 4, top_k + 16)
        skip = Embedded(None, None, failed=False)
        embedded = skip if ranking == "lexical" else await self._embed(query)
        vector, vectors = embedded.vector, self.vectors
        async with self._db.read() as conn:
            lexical: list[Hit] = []
            semantic: list[Hit] | None = None

            async def by_words() -> None:
                nonlocal lexical
                found = await self.index.search(conn, query, scope, depth)
                lexical = [h for h in found if h.score >= min_score]

            async def by_meaning() -> None:
                nonlocal semantic
                assert vector is not None
                assert vectors is not None
                semantic = await vectors.search(conn, vector, scope, depth)

            # The word search runs in SQLite's thread while the vector scan runs here.
            # A failure is raised as itself (callers handle sqlite3.Error), not as a group.
            try:
                async with anyio.create_task_group() as both:
                    if ranking != "semantic" or vector is None:
                        both.start_soon(by_words)
                    if vector is not None and vectors is not None:
                        both.start_soon(by_meaning)
            except ExceptionGroup as failed:
                raise failed.exceptions[0] from None
            hits = lexical
            if semantic is not None:
                hits = semantic if ranking == "semantic" else fuse(lexical, semantic, self.fusion)
                hits = hits[:depth]
            records = await by_seq(conn, [h.seq for h in hits])
        ranked = sorted(
            (Recalled(records[h.seq], h.score) for h in hits if h.seq in records),
            key=rank_key,
        )
        chosen = fit_budget(ranked, top_k, char_budget, lambda r: len(r.record.text))
        if touch and chosen:
            await self.touch([r.record.id for r in chosen])
        return chosen

    async def touch(self, ids: Sequence[str]) -> None:
        """Stamp ``last_recalled_at`` (never fails a recall: an error is only logged)."""
        if not ids:
            return
        marks = ", ".join("?" for _ in ids)
        try:
            async with self._db.transaction() as conn:
                await conn.execute(
                    f"UPDATE memories SET last_recalled_at = ? WHERE id IN ({marks})",  # noqa: S608
                    (encode_time(self._clock()), *ids),
                )
        except sqlite3.Error as exc:
            log.warning("memory-touch-failed", count=len(ids), error=type(exc).__name__)

    # -- reading --------------------------------------------------------------------

    async def get(self, record_id: str, *, owner: str | None = None) -> MemoryRecord | None:
        """One record by id; with ``owner``, only if it is that owner's."""
        async with self._db.read() as conn:
            if owner is None:
                return await one(conn, "id = ?", (record_id,))
            return await one(conn, "id = ? AND owner = ?", (record_id, check_owner(owner)))

    async def list(
        self,
        owner: str | None,
        *,
        kind: str | None = None,
        limit: int = 20,
        offset: int = 0,
        include_archived: bool = False,
        seen_by: str | None = None,
    ) -> list[MemoryRecord]:
        """Newest first. ``owner=None`` lists every owner's (operator use only);
        ``seen_by`` keeps only what that agent may recall (see :func:`listing_where`)."""
        where, params = listing_where(owner, kind, include_archived, seen_by)
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                f"SELECT * FROM memories WHERE {where}"  # noqa: S608 - fixed clauses
                " ORDER BY updated_at DESC, seq DESC LIMIT ? OFFSET ?",
                (*params, max(0, limit), max(0, offset)),
            )
        return [to_record(r) for r in rows]

    async def count(
        self,
        owner: str | None,
        *,
        kind: str | None = None,
        include_archived: bool = False,
        seen_by: str | None = None,
    ) -> int:
        where, params = listing_where(owner, kind, include_archived, seen_by)
        async with self._db.read() as conn:
            sql = f"SELECT count(*) FROM memories WHERE {where}"  # noqa: S608 - fixed clauses
            row = await fetch_one(conn, sql, params)
        return int(row[0]) if row is not None else 0

    async def records(
        self, owner: str | None = None, *, batch: int = 500
    ) -> AsyncIterator[MemoryRecord]:
        """Every record (archived included), oldest first, read in batches (export)."""
        after = 0
        owner_sql, owner_params = ("AND owner = ?", [owner]) if owner is not None else ("", [])
        while True:
            async with self._db.read() as conn:
                rows = await fetch_all(
                    conn,
                    f"SELECT * FROM memories WHERE seq > ? {owner_sql} ORDER BY seq LIMIT ?",  # noqa: S608
                    (after, *owner_params, batch),
                )
            for row in rows:
                yield to_record(row)
            if len(rows) < batch:
                return
            after = int(rows[-1]["seq"])

    # -- forgetting -----------------------------------------------------------------

    async def archive(
        self, owner: str, record_id: str, *, seen_by: str | None = None
    ) -> MemoryRecord | None:
        """Hide one of ``owner``'s records from recall and listing. ``None`` when there
        is no such live record of that owner (another owner's id looks the same), or,
        with ``seen_by``, when that agent may not see it (another agent's record)."""
        check_owner(owner)
        where, params = "id = ? AND owner = ? AND archived = 0", [record_id, owner]
        if seen_by is not None:
            where, params = f"{where} AND {SEEN_BY}", [*params, seen_by]
        async with self._db.transaction() as conn:
            row = await one_row(conn, where, params)
            if row is None:
                return None
            await conn.execute(
                "UPDATE memories SET archived = 1, updated_at = ? WHERE seq = ?",
                (encode_time(self._clock()), row.seq),
            )
        if self.vectors is not None:
            self.vectors.removed([row.seq])
        log.info("memory-archived", id=record_id, owner=owner)
        return row.record

    async def delete(self, record_id: str, *, owner: str | None = None) -> bool:
        """Hard delete: the row, its index entries, and the bytes.

        ``secure_delete`` makes SQLite overwrite freed content with zeros (the
        database keeps it on from the start, so no earlier merge or page split left a
        stale copy; it is said here too, as this relies on it); the index is asked to
        drop any residue (the record's FTS5 shard is merged); and a ``TRUNCATE``
        checkpoint empties the WAL file, which otherwise keeps old page images until
        it is reused.
        """
        async with self._db.transaction() as conn:
            sql, params = "id = ?", [record_id]
            if owner is not None:
                sql, params = "id = ? AND owner = ?", [record_id, owner]
            row = await one_row(conn, sql, params)
            if row is None:
                return False
            previous = await fetch_one(conn, "PRAGMA secure_delete")
            await conn.execute("PRAGMA secure_delete = ON")
            try:
                await conn.execute("DELETE FROM memories WHERE seq = ?", (row.seq,))
                await self.index.deleted(conn, [row.seq])
            finally:
                if previous is not None and not previous[0]:
                    await conn.execute("PRAGMA secure_delete = OFF")
        if self.vectors is not None:
            self.vectors.removed([row.seq])
        await self.checkpoint()
        log.info("memory-deleted", id=record_id, owner=row.record.owner)
        return True

    async def checkpoint(self) -> None:
        """Empty the WAL into the database file (old page images included)."""
        if self._db.path is None:
            return
        async with self._db.read() as conn:
            row = await fetch_one(conn, "PRAGMA wal_checkpoint(TRUNCATE)")
        if row is not None and row[0]:
            log.warning("memory-checkpoint-busy", path=self._db.location)


# --- helpers ------------------------------------------------------------------------


def fit_budget(
    items: Sequence[T], top_k: int, budget: int | None, size: Callable[[T], int]
) -> list[T]:
    """The first ``top_k`` items, in order, whose sizes fit ``budget`` together; an item
    too large for what is left is skipped so a smaller one further down may still fit."""
    chosen: list[T] = []
    left = budget
    for item in items:
        if len(chosen) >= top_k:
            break
        if left is not None:
            needed = size(item)
            if needed > left:
                continue
            left -= needed
        chosen.append(item)
    return chosen


def same_meaning(new: str, old: str, similar: Resemblance) -> bool:
    """Close vectors (already checked) and the guards: same polarity, mostly the same
    wording, and no word swapped for another (one text may only add words)."""
    if not similar.same_polarity or similar.jaccard < VECTOR_DEDUPE_JACCARD:
        return False
    a, b = set(content_words(new)), set(content_words(old))
    return a <= b or b <= a


def rank_key(item: Recalled) -> tuple[float, int, float, str]:
    record = item.record
    return (
        -float(f"{item.score:.{SCORE_DIGITS}g}"),
        -record.importance,
        -record.updated_at.timestamp(),
        record.id,
    )
