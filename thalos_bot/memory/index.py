"""The index seam: how recall finds candidate records for a query.

:class:`Fts5Index` is the embedded default: SQLite FTS5 with BM25 ranking, kept in step
by triggers (see :mod:`thalos_bot.memory.schema`). An embedding index would implement
the same protocol: ``search`` by vector similarity, and use the write hooks to keep its
vectors next to the records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import aiosqlite

from thalos_bot.memory.text import fts_or_query
from thalos_bot.storage.database import fetch_all

TEXT_WEIGHT = 1.0
TAGS_WEIGHT = 0.5


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

    async def search(
        self, conn: aiosqlite.Connection, query: str, scope: Scope, limit: int
    ) -> list[Hit]:
        match = fts_or_query(query)
        if match is None or limit <= 0:
            return []
        where, params = scope.where("m")
        sql = (
            "SELECT m.seq AS seq, bm25(memories_fts, ?, ?) AS rank"  # noqa: S608 - fixed clauses
            " FROM memories_fts JOIN memories AS m ON m.seq = memories_fts.rowid"
            f" WHERE memories_fts MATCH ? AND {where}"
            " ORDER BY rank LIMIT ?"
        )
        rows = await fetch_all(conn, sql, (TEXT_WEIGHT, TAGS_WEIGHT, match, *params, limit))
        # FTS5's bm25() is negative, lower meaning more relevant; flip it.
        return [Hit(int(r["seq"]), -float(r["rank"])) for r in rows]

    async def written(self, conn: aiosqlite.Connection, seq: int, text: str) -> None:
        return None  # the triggers index it

    async def deleted(self, conn: aiosqlite.Connection, seqs: Sequence[int]) -> None:
        if not seqs:
            return
        # The delete trigger already removed the entries from the logical index, but
        # FTS5 records a deletion as a marker in a new segment: the old segment, terms
        # and all, stays in memories_fts_data until segments are merged. 'optimize'
        # merges everything into one segment, so the old ones (and their pages) go.
        await conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")
