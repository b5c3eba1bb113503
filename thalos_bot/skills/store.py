"""The :class:`SkillStore`: skills in SQLite, one row per name, searchable with FTS5.

Files are the source of truth; the store only mirrors what the last sync accepted. A
skill is never deleted, only deactivated, so ``thalos-bot skills list`` can still say
where an inactive one came from.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import MappingProxyType

import aiosqlite

from thalos_bot.skills.document import SkillDocument, SkillSummary
from thalos_bot.skills.fts import match_expression
from thalos_bot.storage.database import Database, decode_time, encode_time, fetch_all, fetch_one


@dataclass(frozen=True, slots=True)
class StoredSkill:
    """A skill row, without its body."""

    name: str
    description: str
    source: Path
    sha256: str
    active: bool
    updated_at: datetime
    tags: tuple[str, ...] = ()
    license: str | None = None
    compatibility: str | None = None
    allowed_tools: tuple[str, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    folder: Path | None = None


@dataclass(frozen=True, slots=True)
class LoadedSkill:
    """What ``skills__load`` and ``skills__read`` need of an active skill."""

    body: str
    folder: Path | None
    """The real path of the skill's folder as synced; None for a single-file skill."""


_SELECT_STORED = """
SELECT name, description, source, sha256, active, updated_at, tags, license, compatibility,
       allowed_tools, metadata, folder
FROM skills ORDER BY name
"""


def _stored(row: sqlite3.Row) -> StoredSkill:
    return StoredSkill(
        name=row["name"],
        description=row["description"],
        source=Path(row["source"]),
        sha256=row["sha256"],
        active=bool(row["active"]),
        updated_at=decode_time(row["updated_at"]),
        tags=tuple(json.loads(row["tags"])),
        license=row["license"],
        compatibility=row["compatibility"],
        allowed_tools=tuple(json.loads(row["allowed_tools"])),
        metadata=MappingProxyType(dict(json.loads(row["metadata"]))),
        folder=None if row["folder"] is None else Path(row["folder"]),
    )


_UPSERT = """
INSERT INTO skills (
    name, description, body, tags, license, compatibility, metadata, allowed_tools,
    source, sha256, folder, active, created_at, updated_at
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)
ON CONFLICT (name) DO UPDATE SET
    description = excluded.description,
    body = excluded.body,
    tags = excluded.tags,
    license = excluded.license,
    compatibility = excluded.compatibility,
    metadata = excluded.metadata,
    allowed_tools = excluded.allowed_tools,
    source = excluded.source,
    sha256 = excluded.sha256,
    folder = excluded.folder,
    active = 1,
    updated_at = excluded.updated_at
"""

_SEARCH = """
SELECT skills.name AS name, skills.description AS description
FROM skills_fts JOIN skills ON skills.id = skills_fts.rowid
WHERE skills_fts MATCH ? AND skills.active = 1
ORDER BY bm25(skills_fts, 10.0, 5.0, 3.0, 1.0), skills.name
LIMIT ? OFFSET ?
"""


class SkillStore:
    """Skills in the shared :class:`~thalos_bot.storage.database.Database`."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def stored(self) -> list[StoredSkill]:
        """Every skill row, active or not, by name."""
        async with self._db.read() as conn:
            rows = await fetch_all(conn, _SELECT_STORED)
        return [_stored(row) for row in rows]

    async def write(
        self,
        upserts: Sequence[SkillDocument],
        deactivate: Sequence[str],
        now: datetime,
        *,
        also: Callable[[aiosqlite.Connection], Awaitable[None]] | None = None,
    ) -> None:
        """Insert or replace ``upserts`` (active) and deactivate ``deactivate``, in one
        transaction with ``also`` (the pins and holds): a sync applies entirely or not
        at all."""
        stamp = encode_time(now)
        async with self._db.transaction() as conn:
            if also is not None:
                await also(conn)
            for doc in upserts:
                await conn.execute(
                    _UPSERT,
                    (
                        doc.name,
                        doc.description,
                        doc.body,
                        json.dumps(list(doc.tags)),
                        doc.license,
                        doc.compatibility,
                        json.dumps(dict(doc.metadata), sort_keys=True),
                        json.dumps(list(doc.allowed_tools)),
                        str(doc.path),
                        doc.sha256,
                        None if doc.folder is None else str(doc.folder),
                        stamp,
                        stamp,
                    ),
                )
            for name in deactivate:
                await conn.execute(
                    "UPDATE skills SET active = 0, updated_at = ? WHERE name = ? AND active = 1",
                    (stamp, name),
                )

    async def active_summaries(self) -> list[SkillSummary]:
        """Name and description of every active skill, by name."""
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn, "SELECT name, description FROM skills WHERE active = 1 ORDER BY name"
            )
        return [SkillSummary(row["name"], row["description"]) for row in rows]

    async def body(self, name: str) -> str | None:
        """The body of the active skill ``name``, or None."""
        async with self._db.read() as conn:
            row = await fetch_one(
                conn, "SELECT body FROM skills WHERE name = ? AND active = 1", (name,)
            )
        return None if row is None else str(row["body"])

    async def loaded(self, name: str) -> LoadedSkill | None:
        """The body and folder of the active skill ``name``, or None."""
        async with self._db.read() as conn:
            row = await fetch_one(
                conn, "SELECT body, folder FROM skills WHERE name = ? AND active = 1", (name,)
            )
        if row is None:
            return None
        folder = row["folder"]
        return LoadedSkill(str(row["body"]), None if folder is None else Path(folder))

    async def search(
        self,
        query: str,
        top_k: int,
        *,
        allowed: Callable[[str], bool],
        page_size: int,
    ) -> list[SkillSummary]:
        """The best ``top_k`` active skills for ``query`` that ``allowed`` accepts.

        Ranked rows are read a page at a time (``page_size``), filtered, and more pages
        read until ``top_k`` are kept or the ranking runs out, so skills ``allowed``
        refuses never take the place of ones it accepts.
        """
        expression = match_expression(query)
        if expression is None or top_k < 1:
            return []
        page_size = max(page_size, top_k)
        kept: list[SkillSummary] = []
        offset = 0
        async with self._db.read() as conn:
            while len(kept) < top_k:
                rows = await fetch_all(conn, _SEARCH, (expression, page_size, offset))
                kept.extend(
                    SkillSummary(row["name"], row["description"])
                    for row in rows
                    if allowed(row["name"])
                )
                if len(rows) < page_size:
                    break
                offset += page_size
        return kept[:top_k]
