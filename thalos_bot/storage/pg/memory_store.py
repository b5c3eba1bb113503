"""Long-term memory on PostgreSQL, shared by every replica: the same rules as
:class:`~thalos_bot.memory.store.MemoryStore` (owner on every query, dedupe, hybrid
recall fused from words and meaning, archive, hard delete), in PostgreSQL's terms.

Words are ranked by ``ts_rank_cd`` over the generated ``tsvector`` (the text weighs
twice the tags, as on SQLite), vectors by the in-memory scan of
:class:`~thalos_bot.storage.pg.memory_vectors.PgVectorIndex`.

Forgetting on PostgreSQL is weaker than on SQLite, and this says so: ``DELETE``
removes the row for every reader at once, but the old tuple stays in the table's
pages until ``VACUUM`` reclaims them (autovacuum does, in time), its bytes stay in
the write-ahead log until those segments are recycled, and in every base backup or
WAL archive taken meanwhile. SQLite's ``secure_delete`` and checkpoint have no
equivalent; run ``VACUUM memories`` after a forget that must leave no trace in the
live files, and mind the backups.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

import anyio
import psycopg
import structlog
from psycopg.rows import DictRow

from thalos_bot.config.memory import CONTAINMENT_THRESHOLD, DEDUPE_THRESHOLD
from thalos_bot.domain.clock import utc_now
from thalos_bot.memory.fusion import DEFAULT_FUSION, Fusion, Ranking, fuse
from thalos_bot.memory.index import Hit, Scope
from thalos_bot.memory.records import (
    MemoryRecord,
    NewMemory,
    check_owner,
    merge_tags,
    new_memory,
)
from thalos_bot.memory.redact import SessionTables
from thalos_bot.memory.rows import Row, tags_json
from thalos_bot.memory.rows import to_record as rows_to_record
from thalos_bot.memory.store import (
    DEDUPE_CANDIDATES,
    DEDUPE_SIMILARITY,
    Recalled,
    Stored,
    fit_budget,
    rank_key,
    same_meaning,
)
from thalos_bot.memory.text import (
    Resemblance,
    query_terms,
    resemblance,
)
from thalos_bot.memory.vectors import Embedded
from thalos_bot.storage.database import as_utc
from thalos_bot.storage.pg.database import Connection, PgDatabase, fetch_all, fetch_one
from thalos_bot.storage.pg.memory_vectors import PgVectorIndex, bump

log = structlog.get_logger(__name__)

TEXT_WEIGHT = 1.0
TAGS_WEIGHT = 0.5
_WEIGHTS = f"'{{0, 0, {TAGS_WEIGHT}, {TEXT_WEIGHT}}}'"  # ts_rank's {D, C, B, A}


def scope_where(scope: Scope, alias: str) -> tuple[str, list[Any]]:
    """:meth:`Scope.where` for PostgreSQL."""
    if not scope.owners:
        raise ValueError("a scope needs at least one owner")
    sql = f"NOT {alias}.archived AND {alias}.owner = ANY(%s)"
    params: list[Any] = [list(scope.owners)]
    if scope.exact_agent:
        sql += f" AND {alias}.agent IS NOT DISTINCT FROM %s"
        params.append(scope.agent)
    elif scope.agent is None:
        sql += f" AND {alias}.agent IS NULL"
    else:
        sql += f" AND ({alias}.agent IS NULL OR {alias}.agent = %s)"
        params.append(scope.agent)
    return sql, params


def listing_where(
    owner: str | None, kind: str | None, include_archived: bool, seen_by: str | None = None
) -> tuple[str, list[Any]]:
    """:func:`thalos_bot.memory.rows.listing_where` for PostgreSQL."""
    clauses, params = ["true"], list[Any]()
    if owner is not None:
        clauses.append("owner = %s")
        params.append(check_owner(owner))
    if seen_by is not None:
        clauses.append("(agent IS NULL OR agent = %s)")
        params.append(seen_by)
    if kind is not None:
        clauses.append("kind = %s")
        params.append(kind)
    if not include_archived:
        clauses.append("NOT archived")
    return " AND ".join(clauses), params


def to_record(row: DictRow) -> MemoryRecord:
    return rows_to_record(row, as_utc)


_COLUMNS = (
    "seq, id, owner, agent, kind, text, tags, importance, created_at, updated_at,"
    " last_recalled_at, archived"
)


async def one_row(conn: Connection, where: str, params: Sequence[Any]) -> Row | None:
    sql = f"SELECT {_COLUMNS} FROM memories WHERE {where}"  # noqa: S608 - fixed clauses
    row = await fetch_one(conn, sql, params)
    return None if row is None else Row(int(row["seq"]), to_record(row))


async def by_seq(conn: Connection, seqs: Sequence[int]) -> dict[int, MemoryRecord]:
    if not seqs:
        return {}
    sql = f"SELECT {_COLUMNS} FROM memories WHERE seq = ANY(%s)"  # noqa: S608 - fixed
    rows = await fetch_all(conn, sql, (list(seqs),))
    return {int(r["seq"]): to_record(r) for r in rows}


async def word_search(conn: Connection, query: str, scope: Scope, limit: int) -> list[Hit]:
    """Records of ``scope`` sharing a word with ``query``, best first. Any text is
    safe: each term goes through ``plainto_tsquery`` and the terms are OR-ed."""
    terms = query_terms(query)
    if not terms or limit <= 0:
        return []
    match = " || ".join("plainto_tsquery('english', %s)" for _ in terms)
    where, params = scope_where(scope, "m")
    rows = await fetch_all(
        conn,
        f"SELECT m.seq, ts_rank_cd({_WEIGHTS}, m.words, q.query) AS rank"  # noqa: S608
        f" FROM memories AS m, (SELECT {match} AS query) AS q"
        f" WHERE m.words @@ q.query AND {where} ORDER BY rank DESC, m.seq DESC LIMIT %s",
        (*terms, *params, limit),
    )
    return [Hit(int(r["seq"]), float(r["rank"])) for r in rows]


class PgMemoryStore:
    """Remember, recall, list, archive and hard-delete memories on PostgreSQL."""

    def __init__(
        self,
        db: PgDatabase,
        *,
        clock: Callable[[], datetime] = utc_now,
        dedupe_threshold: float = DEDUPE_THRESHOLD,
        containment_threshold: float = CONTAINMENT_THRESHOLD,
        vectors: PgVectorIndex | None = None,
        dedupe_similarity: float = DEDUPE_SIMILARITY,
        on_pending: Callable[[], None] | None = None,
        fusion: Fusion = DEFAULT_FUSION,
    ) -> None:
        self._db = db
        self.vectors = vectors
        self.dedupe_similarity = dedupe_similarity
        self._on_pending = on_pending
        self.fusion = fusion
        self._clock = clock
        self.dedupe_threshold = dedupe_threshold
        self.containment_threshold = containment_threshold

    @property
    def database(self) -> PgDatabase:
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
            before = await bump(conn) - 1
        self._wrote(before)
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

    def _wrote(self, before: int) -> None:
        if self.vectors is not None:
            self.vectors.wrote(before, before + 1)

    async def _embed(self, text: str) -> Embedded:
        if self.vectors is None:
            return Embedded(None, None, failed=False)
        return await self.vectors.embed(text)

    async def _index_vector(self, conn: Connection, seq: int, embedded: Embedded) -> bool:
        if self.vectors is None or not self.vectors.available:
            return False
        if embedded.codes is None:
            await self.vectors.mark_pending(conn, seq)
            return True
        await self.vectors.write(conn, seq, embedded.codes)
        return False

    async def insert_many(self, memories: Iterable[NewMemory]) -> int:
        """Insert without dedupe, in one transaction; the new records are pending."""
        now = self._clock()
        count = 0
        indexing = self.vectors is not None and self.vectors.available
        async with self._db.transaction() as conn:
            for memory in memories:
                row = await self._insert(conn, memory, now)
                if self.vectors is not None and indexing:
                    await self.vectors.mark_pending(conn, row.seq)
                count += 1
            before = await bump(conn) - 1
        self._wrote(before)
        log.info("memory-imported", count=count)
        if count and indexing and self._on_pending is not None:
            self._on_pending()
        return count

    async def _duplicate_of(
        self, conn: Connection, memory: NewMemory, embedded: Embedded
    ) -> tuple[Row, Resemblance] | None:
        scope = Scope((memory.owner,), memory.agent, exact_agent=True)
        hits = await word_search(conn, memory.text, scope, DEDUPE_CANDIDATES)
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
        self, conn: Connection, old: Row, new: NewMemory, similar: Resemblance, now: datetime
    ) -> MemoryRecord:
        near_equal = similar.jaccard >= self.dedupe_threshold
        text = new.text if near_equal or similar.new_is_larger else old.text
        kind = new.kind if old.record.kind == "note" else old.record.kind
        tags = merge_tags(old.record.tags, new.tags)
        importance = max(old.record.importance, new.importance)
        await conn.execute(
            "UPDATE memories SET text = %s, kind = %s, tags = %s, importance = %s,"
            " updated_at = %s WHERE seq = %s",
            (text, kind, tags_json(tags), importance, as_utc(now), old.seq),
        )
        row = await one_row(conn, "seq = %s", (old.seq,))
        assert row is not None
        return row.record

    async def _insert(self, conn: Connection, memory: NewMemory, now: datetime) -> Row:
        check_owner(memory.owner)
        stamp = as_utc(now)
        while True:
            record_id = "m-" + secrets.token_hex(6)
            if await fetch_one(conn, "SELECT 1 FROM memories WHERE id = %s", (record_id,)) is None:
                break
        row = await fetch_one(
            conn,
            "INSERT INTO memories (id, owner, agent, kind, text, tags, importance,"
            " created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
            " RETURNING seq",
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
        assert row is not None
        return Row(
            int(row["seq"]),
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
        """As :meth:`MemoryStore.recall <thalos_bot.memory.store.MemoryStore.recall>`."""
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
            if ranking != "semantic" or vector is None:
                found = await word_search(conn, query, scope, depth)
                lexical = [h for h in found if h.score >= min_score]
            hits = lexical
            if vector is not None and vectors is not None:
                semantic = await vectors.search(conn, vector, scope, depth)
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
        try:
            async with self._db.transaction() as conn:
                await conn.execute(
                    "UPDATE memories SET last_recalled_at = %s WHERE id = ANY(%s)",
                    (as_utc(self._clock()), list(ids)),
                )
        except psycopg.Error as exc:
            log.warning("memory-touch-failed", count=len(ids), error=type(exc).__name__)

    # -- reading --------------------------------------------------------------------

    async def get(self, record_id: str, *, owner: str | None = None) -> MemoryRecord | None:
        async with self._db.read() as conn:
            if owner is None:
                row = await one_row(conn, "id = %s", (record_id,))
            else:
                row = await one_row(conn, "id = %s AND owner = %s", (record_id, check_owner(owner)))
        return None if row is None else row.record

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
        where, params = listing_where(owner, kind, include_archived, seen_by)
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                f"SELECT {_COLUMNS} FROM memories WHERE {where}"  # noqa: S608 - fixed
                " ORDER BY updated_at DESC, seq DESC LIMIT %s OFFSET %s",
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
            sql = f"SELECT count(*) AS n FROM memories WHERE {where}"  # noqa: S608 - fixed
            row = await fetch_one(conn, sql, params)
        return int(row["n"]) if row is not None else 0

    async def records(
        self, owner: str | None = None, *, batch: int = 500
    ) -> AsyncIterator[MemoryRecord]:
        """Every record (archived included), oldest first, read in batches (export)."""
        after = 0
        owner_sql, owner_params = ("AND owner = %s", [owner]) if owner is not None else ("", [])
        while True:
            async with self._db.read() as conn:
                rows = await fetch_all(
                    conn,
                    f"SELECT {_COLUMNS} FROM memories WHERE seq > %s {owner_sql}"  # noqa: S608
                    " ORDER BY seq LIMIT %s",
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
        check_owner(owner)
        where, params = "id = %s AND owner = %s AND NOT archived", [record_id, owner]
        if seen_by is not None:
            where, params = f"{where} AND (agent IS NULL OR agent = %s)", [*params, seen_by]
        async with self._db.transaction() as conn:
            row = await one_row(conn, where + " FOR UPDATE", params)
            if row is None:
                return None
            await conn.execute(
                "UPDATE memories SET archived = true, updated_at = %s WHERE seq = %s",
                (as_utc(self._clock()), row.seq),
            )
            before = await bump(conn) - 1
        self._wrote(before)
        if self.vectors is not None:
            self.vectors.removed([row.seq])
        log.info("memory-archived", id=record_id, owner=owner)
        return row.record

    async def delete(self, record_id: str, *, owner: str | None = None) -> bool:
        """Hard delete: the row, its words and its vector (see the module docstring for
        what PostgreSQL keeps of the bytes until ``VACUUM``)."""
        async with self._db.transaction() as conn:
            sql, params = "id = %s", [record_id]
            if owner is not None:
                sql, params = "id = %s AND owner = %s", [record_id, owner]
            row = await one_row(conn, sql + " FOR UPDATE", params)
            if row is None:
                return False
            await conn.execute("DELETE FROM memories WHERE seq = %s", (row.seq,))
            before = await bump(conn) - 1
        self._wrote(before)
        if self.vectors is not None:
            self.vectors.removed([row.seq])
        log.info("memory-deleted", id=record_id, owner=row.record.owner)
        return True

    async def checkpoint(self) -> None:
        """Nothing to do on PostgreSQL (the server owns its write-ahead log)."""
        await anyio.lowlevel.checkpoint()


def session_tables(db: PgDatabase) -> SessionTables:
    """The session tables on PostgreSQL, for forgetting everywhere (no ``secure_delete``
    here: the old row versions stay until VACUUM, see the README)."""
    return SessionTables(db.transaction, db.read, fetch_one, fetch_all, "%s")
