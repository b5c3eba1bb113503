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

from thalos_bot.memory.text import fts_phrase, query_terms
from thalos_bot.storage.database import fetch_all

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
    """Full-text search with BM25 over ``memories_fts``; the triggers do the writing."""

    name = "fts5"

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        """Document counts of the stems found in the index. Counting a common term reads
        its whole doclist, so counts are kept, and forgotten after
        :data:`COUNTS_KEPT_FOR` writes: a budget only needs them roughly right. Absent
        stems cost nothing to look up and are looked up again (they may appear)."""
        self._writes = 0

    async def search(
        self, conn: aiosqlite.Connection, query: str, scope: Scope, limit: int
    ) -> list[Hit]:
        terms = query_terms(query)
        if not terms or limit <= 0:
            return []
        terms, since = await self._affordable(conn, terms)
        match = " OR ".join(fts_phrase(t) for t in terms)
        where, params = scope.where("m")
        sql = (
            "SELECT m.seq AS seq, bm25(memories_fts, ?, ?) AS rank"  # noqa: S608 - fixed clauses
            " FROM memories_fts JOIN memories AS m ON m.seq = memories_fts.rowid"
            f" WHERE memories_fts MATCH ? AND memories_fts.rowid >= ? AND {where}"
            " ORDER BY rank LIMIT ?"
        )
        rows = await fetch_all(conn, sql, (TEXT_WEIGHT, TAGS_WEIGHT, match, since, *params, limit))
        # FTS5's bm25() is negative, lower meaning more relevant; flip it.
        return [Hit(int(r["seq"]), -float(r["rank"])) for r in rows]

    async def _affordable(
        self, conn: aiosqlite.Connection, terms: list[str]
    ) -> tuple[list[str], int]:
        """``terms`` cut to :data:`MATCH_BUDGET` (see there), and the lowest rowid to
        rank: every term when their document counts fit it together; otherwise the
        terms the index lacks (they cost nothing) and the present ones rarest first
        while they fit, the rarest present one always. When even that one is over the
        budget, only about the newest budget's worth of its rows are ranked (a word
        that common says little; recall by meaning does not depend on it). A term's
        count is that of its longest stem in the index (porter nearly always keeps a
        prefix: "morning" → "morn", or turns a final y into i: "every" → "everi")."""
        stems = {t: _stems(t) for t in terms}
        counts = self._counts
        missing = sorted({p for ps in stems.values() for p in ps} - counts.keys())
        if missing:
            marks = ", ".join("?" for _ in missing)
            rows = await fetch_all(
                conn,
                f"SELECT term, doc FROM memories_fts_vocab WHERE term IN ({marks})",  # noqa: S608
                missing,
            )
            counts.update({str(r[0]): int(r[1]) for r in rows})
        known = {
            t: next((counts[p] for p in reversed(ps) if p in counts), 0) for t, ps in stems.items()
        }
        if sum(known.values()) <= MATCH_BUDGET:
            return terms, 0
        kept = [t for t in terms if known[t] == 0]
        spent = 0
        for n, term in enumerate(sorted((t for t in terms if known[t]), key=lambda t: known[t])):
            if n and spent + known[term] > MATCH_BUDGET:
                break
            kept.append(term)
            spent += known[term]
        if spent <= MATCH_BUDGET:
            return kept, 0
        newest = await fetch_all(conn, "SELECT max(seq) FROM memories")
        last = int(newest[0][0] or 0)
        return kept, max(0, last - last * MATCH_BUDGET // spent)

    async def written(self, conn: aiosqlite.Connection, seq: int, text: str) -> None:
        self._wrote(1)  # the triggers index it

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
        # and all, stays in memories_fts_data until segments are merged. 'optimize'
        # merges everything into one segment, so the old ones (and their pages) go.
        await conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")


def _stems(term: str) -> list[str]:
    """What porter may have made of ``term`` (it strips at most a few letters),
    shortest first."""
    shortest = max(min(MIN_STEM, len(term)), len(term) - MAX_STRIPPED)
    stems = [term[:n] for n in range(shortest, len(term) + 1)]
    if term.endswith("y") and len(term) > MIN_STEM:
        stems.append(term[:-1] + "i")
    return stems
