"""Rows of the ``memories`` table as records, and the SQL fragments the store reuses."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiosqlite

from thalos_bot.memory.records import MemoryRecord, check_owner
from thalos_bot.storage.database import decode_time, fetch_all, fetch_one

SEEN_BY = "(agent IS NULL OR agent = ?)"
"""The agent condition recall applies (:class:`~thalos_bot.memory.index.Scope`), for
listing and forgetting."""


def tags_json(tags: Iterable[str]) -> str:
    return json.dumps(list(tags), ensure_ascii=False)


def listing_where(
    owner: str | None, kind: str | None, include_archived: bool, seen_by: str | None = None
) -> tuple[str, list[str]]:
    """``seen_by``: only the records that agent may see (shared across the owner's
    agents, or its own), exactly as recall does; ``None`` is every agent's (operator)."""
    clauses, params = ["1 = 1"], []
    if owner is not None:
        clauses.append("owner = ?")
        params.append(check_owner(owner))
    if seen_by is not None:
        clauses.append(SEEN_BY)
        params.append(seen_by)
    if kind is not None:
        clauses.append("kind = ?")
        params.append(kind)
    if not include_archived:
        clauses.append("archived = 0")
    return " AND ".join(clauses), params


@dataclass(frozen=True, slots=True)
class Row:
    """A record with its internal rowid (never shown outside the store)."""

    seq: int
    record: MemoryRecord

    @property
    def text(self) -> str:
        return self.record.text


async def one(
    conn: aiosqlite.Connection, where: str, params: Sequence[object]
) -> MemoryRecord | None:
    row = await one_row(conn, where, params)
    return None if row is None else row.record


async def one_row(conn: aiosqlite.Connection, where: str, params: Sequence[object]) -> Row | None:
    sql = f"SELECT * FROM memories WHERE {where}"  # noqa: S608 - fixed clauses
    row = await fetch_one(conn, sql, params)
    return None if row is None else Row(int(row["seq"]), to_record(row))


async def by_seq(conn: aiosqlite.Connection, seqs: Sequence[int]) -> dict[int, MemoryRecord]:
    if not seqs:
        return {}
    marks = ", ".join("?" for _ in seqs)
    sql = f"SELECT * FROM memories WHERE seq IN ({marks})"  # noqa: S608 - placeholders
    rows = await fetch_all(conn, sql, seqs)
    return {int(r["seq"]): to_record(r) for r in rows}


def to_record(
    row: sqlite3.Row | Mapping[str, Any], time: Callable[[Any], datetime] = decode_time
) -> MemoryRecord:
    """A ``memories`` row as a record; ``time`` reads a stored time (SQLite's ISO text by
    default; PostgreSQL's ``timestamptz`` gives datetimes)."""
    last = row["last_recalled_at"]
    return MemoryRecord(
        id=row["id"],
        owner=row["owner"],
        agent=row["agent"],
        kind=row["kind"],
        text=row["text"],
        tags=tuple(json.loads(row["tags"])),
        importance=int(row["importance"]),
        created_at=time(row["created_at"]),
        updated_at=time(row["updated_at"]),
        last_recalled_at=time(last) if last else None,
        archived=bool(row["archived"]),
    )
