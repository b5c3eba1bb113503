"""The word index: how recall finds candidate records sharing words with a query.

:class:`Fts5Index` is SQLite FTS5 with BM25 ranking over the shards of
:mod:`thalos_bot.memory.schema`, kept in step by triggers. Finding records by meaning
is :class:`~thalos_bot.memory.vectors.VectorIndex`; the store fuses the two rankings.

One statement ranks every shard (a ``UNION ALL`` of per-shard ``bm25()``, merged by
``ORDER BY rank LIMIT``); a shard that cannot hold a row in the window of rowids the
term budget ranks is skipped by a false guard in the same cached statement. The term
budget's document counts come from a sample of two shards, scaled (one vocabulary probe
per stem in two shards rather than in all of them: with every shard probed, a remember
spent 5.8 ms on it at 100k records). BM25's statistics are each shard's own: a store
smaller than one block (512 records) is one shard and ranks exactly as one table did;
in a large one the shards are near-equal samples, so scores compare across them, but
a term's IDF is that of its shard (a word in one record of 100k weighs log 16 less
against common words than over the whole store).

Why 16 shards, measured at 100k records. First a profile of the delete alone (raw
SQLite on a copy of the bench's database; the machine shared and loaded):

======  ===================  ==========  =====================  ===========
shards  'optimize' + commit  checkpoint  delete (sum of those)  BM25 search
======  ===================  ==========  =====================  ===========
1       124 + 42 ms          4 ms        172 ms                 6.0 ms
8       12.8 + 5.4 ms        17.7 ms     36 ms                  —
16      4.6 + 4.5 ms         14.8 ms     28 ms                  6.6 ms
32      2.2 + 2.2 ms         15.4 ms     20 ms                  7.0 ms
======  ===================  ==========  =====================  ===========

(The checkpoint is a ``TRUNCATE``: two ``fdatasync`` and the WAL's ``ftruncate``, each
a file-system journal commit, whatever the shard count; with one index the commit had
already checkpointed the large WAL. The search column is the statement alone on the
same inputs, interleaved.) Then ``bench/memory.py --sizes 100000 --samples 200``, each
run next to one of the code before the shards:

===========  ===============  ==============  ================
p50          before (1)       16 shards       32 shards
===========  ===============  ==============  ================
hard delete  153 / 165 ms     12.6 ms         6.9 ms
recall       5.28 / 6.24 ms   6.19 ms         6.63 ms
remember     5.43 / 5.43 ms   7.31 ms         6.89 ms
===========  ===============  ==============  ================

32 shards halve the delete again but cost recall about 1.3 ms (each shard asked adds
its own lookups of every term); 16 keep recall where it was and the delete well under
the 20 ms target. Three more alternating pairs with 16 shards (before → after, p50):
hard delete 165 → 12.6, 160 → 16.5, 169 → 12.7 ms; recall 6.24 → 6.19, 6.83 → 8.92,
8.03 → 6.27 ms (noise: the machine is shared); remember 5.43 → 7.31, 7.09 → 8.32,
7.37 → 7.06 ms.
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
"""Writes after which the document counts are looked up again."""
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


class Fts5Index:
    """Full-text search with BM25 over the FTS5 shards (see
    :mod:`thalos_bot.memory.schema`); the triggers do the writing."""

    name = "fts5"

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        """About how many records hold each stem looked up (absent ones too, as 0),
        counted in a sample of shards (:func:`_sample`) and scaled to the store.
        Counting a common term reads its whole doclist, so counts are kept, and
        forgotten after :data:`COUNTS_KEPT_FOR` writes or when another connection has
        written: a budget only needs them roughly right. A word thought absent is
        counted again once this index writes it."""
        self._writes = 0
        self._version = -1

    async def search(
        self, conn: aiosqlite.Connection, query: str, scope: Scope, limit: int
    ) -> list[Hit]:
        terms = query_terms(query)
        if not terms or limit <= 0:
            return []
        terms, since, last = await self._affordable(conn, terms)
        match = " OR ".join(fts_phrase(t) for t in terms)
        window = set(_shards_from(since, last))
        where, params = scope.where("m")
        rows = await fetch_all(
            conn,
            f"{_SEARCH} WHERE {where} ORDER BY s.rank LIMIT ?",
            (
                TEXT_WEIGHT,
                TAGS_WEIGHT,
                since,
                match,
                *(shard in window for shard in range(FTS_SHARDS)),
                *params,
                limit,
            ),
        )
        # FTS5's bm25() is negative, lower meaning more relevant; flip it.
        return [Hit(int(r["seq"]), -float(r["rank"])) for r in rows]

    async def _affordable(
        self, conn: aiosqlite.Connection, terms: list[str]
    ) -> tuple[list[str], int, int]:
        """``terms`` cut to :data:`MATCH_BUDGET` (see there), the lowest rowid to rank
        and the highest there is: every term when their document counts fit the budget
        together; otherwise the terms the index lacks (they cost nothing) and the
        present ones rarest first while they fit, the rarest present one always. When
        even that one is over the budget, only about the newest budget's worth of its
        rows are ranked (a word that common says little; recall by meaning does not
        depend on it). A term's count is that of its longest stem in the index
        (porter nearly always keeps a prefix: "morning" → "morn", or turns a final y
        into i: "every" → "everi")."""
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
            shards, scale = _sample(last)
            marks = ", ".join("?" for _ in missing)
            each = " UNION ALL ".join(
                f"SELECT term, doc FROM {vocab_table(n)} WHERE term IN ({marks})"  # noqa: S608
                for n in shards
            )
            rows = await fetch_all(
                conn,
                f"SELECT term, sum(doc) FROM ({each}) GROUP BY term",  # noqa: S608
                missing * len(shards),
            )
            counts.update(dict.fromkeys(missing, 0))
            counts.update({str(r[0]): max(1, round(int(r[1]) * scale)) for r in rows})
        known = {
            t: next((counts[p] for p in reversed(ps) if counts[p]), 0) for t, ps in stems.items()
        }
        if sum(known.values()) <= MATCH_BUDGET:
            return terms, 0, last
        kept = [t for t in terms if known[t] == 0]
        spent = 0
        for n, term in enumerate(sorted((t for t in terms if known[t]), key=lambda t: known[t])):
            if n and spent + known[term] > MATCH_BUDGET:
                break
            kept.append(term)
            spent += known[term]
        if spent <= MATCH_BUDGET:
            return kept, 0, last
        return kept, max(0, last - last * MATCH_BUDGET // spent), last

    async def written(self, conn: aiosqlite.Connection, seq: int, text: str) -> None:
        # The triggers index it. A word thought absent is counted again: the budget
        # takes an absent word as free and adds the rarest present one.
        counts = self._counts
        for word in set(words(text)):
            for stem in _stems(word):
                if counts.get(stem) == 0:
                    del counts[stem]
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


SAMPLE_SHARDS = 2
"""How many shards the document counts are taken from in a store of several."""


def _sample(last: int) -> tuple[list[int], float]:
    """The shards to count documents in, and the factor from their records to the
    store's (``last`` the highest seq): every shard in use while there are at most
    :data:`SAMPLE_SHARDS`, then those of the newest complete blocks (each shard holds
    blocks from all along the store, so they are a fair sample)."""
    last_block = last // FTS_BLOCK
    if last_block < SAMPLE_SHARDS:
        return list(range(last_block + 1)), 1.0
    shards = sorted({(last_block - n) % FTS_SHARDS for n in range(1, SAMPLE_SHARDS + 1)})
    blocks = sum((last_block - 1 - shard) // FTS_SHARDS + 1 for shard in shards)
    return shards, last / (blocks * FTS_BLOCK)


def _search_sql() -> str:
    """Every shard ranked in one statement: ``?1 ?2`` the column weights, ``?3`` the
    lowest rowid, ``?4`` the query, then one guard per shard; the caller's plain ``?``
    marks number on from there. A shard whose guard is false is not searched at all."""
    arms = " UNION ALL ".join(
        f"SELECT rowid AS seq, bm25({t}, ?1, ?2) AS rank FROM {t}"  # noqa: S608 - fixed names
        f" WHERE ?{5 + n} AND {t} MATCH ?4 AND rowid >= ?3"
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
