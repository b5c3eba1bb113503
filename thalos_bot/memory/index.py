"""The word index: how recall finds candidate records sharing words with a query.

:class:`Fts5Index` is SQLite FTS5 with BM25 ranking, kept in step by triggers (see
:mod:`thalos_bot.memory.schema`). Finding records by meaning is
:class:`~thalos_bot.memory.vectors.VectorIndex`; the store fuses the two rankings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import aiosqlite

from thalos_bot.memory.schema import FTS_BLOCK, FTS_SHARDS, shard_of, shard_table, vocab_table
from thalos_bot.memory.text import fts_phrase, query_terms, words
from thalos_bot.storage.database import fetch_all, fetch_one

TEXT_WEIGHT = 1.0
TAGS_WEIGHT = 0.5
MATCH_BUDGET = 1000
"""About how many rows one recall lets FTS5 rank. A MATCH over an OR of terms ranks
every row holding any of them, so a common word ("every", "morning") would make a
query rank a large share of a big store. Terms are taken rarest first while their
document counts fit this budget (the rarest always); a common term adds almost
nothing to BM25 (its IDF is near zero) and the rows that hold only it would rank low.
A store smaller than the budget never drops a term."""
MIN_STEM = 3
COUNTS_KEPT_FOR = 500
"""Writes after which the document counts are looked up again; at most
:data:`~thalos_bot.memory.schema.FTS_BLOCK`, so a record written since the counts were
taken is still in one of the newest shards (see :class:`Fts5Index`)."""
MAX_STRIPPED = 4


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose records a search may return. Archived records are never returned."""

    owners: tuple[str, ...]
    agent: str | None = None
    exact_agent: bool = False
    """False (recall): records shared across agents (``agent IS NULL``) plus ``agent``'s
    own. True (dedupe): exactly the records whose agent is ``agent``."""

    def where(self, alias: str) -> tuple[str, list[str | None]]:
        """A SQL condition on the memories table (as ``alias``) and its parameters."""
        if not self.owners:
            raise ValueError("a scope needs at least one owner")
        marks = ", ".join("?" for _ in self.owners)
        sql = f"{alias}.archived = 0 AND {alias}.owner IN ({marks})"
        params: list[str | None] = list(self.owners)
        if self.exact_agent:
            sql += f" AND {alias}.agent IS ?"
            params.append(self.agent)
        elif self.agent is None:
            sql += f" AND {alias}.agent IS NULL"
        else:
            sql += f" AND ({alias}.agent IS NULL OR {alias}.agent = ?)"
            params.append(self.agent)
        return sql, params


@dataclass(frozen=True, slots=True)
class Hit:
    seq: int
    score: float
    """Higher is more relevant. Only comparable within one index."""


class MemoryIndex(Protocol):
    name: str

    async def search(
        self, conn: aiosqlite.Connection, query: str, scope: Scope, limit: int
    ) -> list[Hit]:
        """At most ``limit`` records in ``scope`` relevant to ``query`` (raw user text),
        most relevant first. Must accept any text without raising a syntax error."""
        ...

    async def written(self, conn: aiosqlite.Connection, seq: int, text: str) -> None:
        """A record was inserted or its text changed (inside the same transaction)."""
        ...

    async def deleted(self, conn: aiosqlite.Connection, seqs: Sequence[int]) -> None:
        """Records were hard-deleted: no trace of them may remain in the index."""
        ...


@dataclass(frozen=True, slots=True)
class _Plan:
    """What one search asks each shard: its MATCH (``None``: skip the shard), and the
    lowest rowid to rank."""

    matches: list[str | None]
    since: int


class Fts5Index:
    """Full-text search with BM25 over the FTS5 shards (see
    :mod:`thalos_bot.memory.schema`); the triggers do the writing."""

    name = "fts5"

    def __init__(self) -> None:
        self._counts: dict[str, tuple[int, ...]] = {}
        """Document counts, per shard, of the stems looked up (absent ones too, as
        zeros). Counting a common term reads its whole doclist, so counts are kept,
        and forgotten after :data:`COUNTS_KEPT_FOR` writes or when another connection
        has written (a budget only needs them roughly right). A shard where a term was
        absent is not asked for it, except the newest shards, where new records go,
        which are asked for every term: a record's text changing in an older shard
        forgets the counts of its words."""
        self._writes = 0
        self._version = -1
        self._fresh: set[int] = set()
        """The shards of the newest two blocks, as of the last search."""

    async def search(
        self, conn: aiosqlite.Connection, query: str, scope: Scope, limit: int
    ) -> list[Hit]:
        terms = query_terms(query)
        if not terms or limit <= 0:
            return []
        plan = await self._plan(conn, terms)
        if not any(plan.matches):
            return []
        where, params = scope.where("m")
        rows = await fetch_all(
            conn,
            f"{_SEARCH} WHERE {where} ORDER BY s.rank LIMIT ?",
            (
                TEXT_WEIGHT,
                TAGS_WEIGHT,
                plan.since,
                *(v for m in plan.matches for v in (m is not None, m or _NOTHING)),
                *params,
                limit,
            ),
        )
        # FTS5's bm25() is negative, lower meaning more relevant; flip it.
        return [Hit(int(r["seq"]), -float(r["rank"])) for r in rows]

    async def _plan(self, conn: aiosqlite.Connection, terms: list[str]) -> _Plan:
        """Each shard's query: the :meth:`_affordable` terms it holds (every one of them
        in the newest shards), within the window of rowids to rank."""
        kept, since, last, counts = await self._affordable(conn, terms)
        fresh = self._fresh = {shard_of(last), shard_of(max(0, last - FTS_BLOCK))}
        window = set(_shards_from(since, last))
        matches: list[str | None] = []
        for shard in range(FTS_SHARDS):
            mine = [t for t in kept if shard in fresh or (shard in window and counts[t][shard])]
            matches.append(" OR ".join(map(fts_phrase, mine)) if mine else None)
        return _Plan(matches, since)

    async def _affordable(
        self, conn: aiosqlite.Connection, terms: list[str]
    ) -> tuple[list[str], int, int, dict[str, tuple[int, ...]]]:
        """``terms`` cut to :data:`MATCH_BUDGET` (see there), the lowest rowid to rank,
        the highest rowid there is, and each term's document count per shard: every
        term when their counts fit the budget together; otherwise the terms the index
        lacks (they cost nothing) and the present ones rarest first while they fit, the
        rarest present one always. When even that one is over the budget, only about
        the newest budget's worth of its rows are ranked (a word that common says
        little; recall by meaning does not depend on it). A term's count is that of its
        longest stem in the index, summed over the shards (porter nearly always keeps a
        prefix: "morning" → "morn", or turns a final y into i: "every" → "everi")."""
        newest = await fetch_one(
            conn,
            "SELECT max(seq), (SELECT data_version FROM pragma_data_version()) FROM memories",
        )
        last, version = (int(newest[0] or 0), int(newest[1])) if newest is not None else (0, 0)
        if version != self._version:
            self._counts.clear()  # another connection wrote
            self._version = version
        stems = {t: _stems(t) for t in terms}
        counts = self._counts
        missing = sorted({p for ps in stems.values() for p in ps} - counts.keys())
        if missing:
            found: dict[str, list[int]] = {p: [0] * FTS_SHARDS for p in missing}
            marks = ", ".join("?" for _ in missing)
            each = " UNION ALL ".join(
                f"SELECT {n}, term, doc FROM {vocab_table(n)} WHERE term IN ({marks})"  # noqa: S608
                for n in range(FTS_SHARDS)
            )
            for shard, term, docs in await fetch_all(conn, each, missing * FTS_SHARDS):
                found[str(term)][int(shard)] = int(docs)
            counts.update({p: tuple(c) for p, c in found.items()})
        per_shard = {
            t: next((counts[p] for p in reversed(ps) if any(counts[p])), _NONE)
            for t, ps in stems.items()
        }
        known = {t: sum(c) for t, c in per_shard.items()}
        if sum(known.values()) <= MATCH_BUDGET:
            return terms, 0, last, per_shard
        kept = [t for t in terms if known[t] == 0]
        spent = 0
        for n, term in enumerate(sorted((t for t in terms if known[t]), key=lambda t: known[t])):
            if n and spent + known[term] > MATCH_BUDGET:
                break
            kept.append(term)
            spent += known[term]
        if spent <= MATCH_BUDGET:
            return kept, 0, last, per_shard
        return kept, max(0, last - last * MATCH_BUDGET // spent), last, per_shard

    async def written(self, conn: aiosqlite.Connection, seq: int, text: str) -> None:
        # The triggers index it. A new record goes to the newest shards, asked for
        # every term anyway until COUNTS_KEPT_FOR (< FTS_BLOCK) writes have cleared the
        # counts, so only a word thought absent everywhere needs counting again (the
        # budget takes an absent word as free); a text written anywhere else may bring
        # words its shard lacked.
        fresh, counts = shard_of(seq) in self._fresh, self._counts
        for word in set(words(text)):
            for stem in _stems(word):
                if not fresh or not any(counts.get(stem, _SOME)):
                    counts.pop(stem, None)
        self._wrote(1)

    def _wrote(self, count: int) -> None:
        self._writes += count
        if self._writes >= COUNTS_KEPT_FOR:
            self._counts.clear()
            self._writes = 0

    async def deleted(self, conn: aiosqlite.Connection, seqs: Sequence[int]) -> None:
        if not seqs:
            return
        self._wrote(len(seqs))
        # The delete trigger already removed the entries from the logical index, but
        # FTS5 records a deletion as a marker in a new segment: the old segment, terms
        # and all, stays in the shard's _data table until segments are merged.
        # 'optimize' merges the shard into one segment, so the old ones (and their
        # pages) go; the other shards never held the record.
        for table in map(shard_table, sorted({shard_of(seq) for seq in seqs})):
            await conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")  # noqa: S608


_NONE = (0,) * FTS_SHARDS
_SOME = (1,)
_NOTHING = '""'
"""The MATCH of a skipped shard (never run: its guard is false)."""


def _search_sql() -> str:
    """Every shard ranked in one statement: ``?1 ?2`` the column weights, ``?3`` the
    lowest rowid, then per shard a guard and its MATCH; the caller's plain ``?`` marks
    number on from there. A shard whose guard is false is not searched at all."""
    arms = " UNION ALL ".join(
        f"SELECT rowid AS seq, bm25({t}, ?1, ?2) AS rank FROM {t}"  # noqa: S608 - fixed names
        f" WHERE ?{4 + 2 * n} AND {t} MATCH ?{5 + 2 * n} AND rowid >= ?3"
        for n, t in enumerate(map(shard_table, range(FTS_SHARDS)))
    )
    return (
        f"SELECT m.seq AS seq, s.rank AS rank FROM ({arms}) AS s"  # noqa: S608 - fixed names
        " JOIN memories AS m ON m.seq = s.seq"
    )


_SEARCH = _search_sql()


def _shards_from(since: int, last: int) -> list[int]:
    """The shards that may hold a record with ``seq >= since`` (``last`` the highest
    seq): all of them unless only the newest few blocks are asked for."""
    first_block, last_block = since // FTS_BLOCK, last // FTS_BLOCK
    if since <= 0 or last_block - first_block + 1 >= FTS_SHARDS:
        return list(range(FTS_SHARDS))
    return sorted({block % FTS_SHARDS for block in range(first_block, last_block + 1)})


def _stems(term: str) -> list[str]:
    """What porter may have made of ``term`` (it strips at most a few letters),
    shortest first."""
    shortest = max(min(MIN_STEM, len(term)), len(term) - MAX_STRIPPED)
    stems = [term[:n] for n in range(shortest, len(term) + 1)]
    if term.endswith("y") and len(term) > MIN_STEM:
        stems.append(term[:-1] + "i")
    return stems
