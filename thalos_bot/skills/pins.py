"""What the operator accepted of each skill (:class:`Pin`), and what the last sync held
back (:class:`Hold`), in the skills' SQLite tables (``0203_skill_pins``).

A pin keeps the digest of every file of the skill as accepted and, for the text files,
their text, so a later review can show what changed. A hold is a skill the last sync
did not load, with why: ``new`` (never accepted), ``changed`` (its files differ from
the pin), ``flagged`` (its text has findings; see :mod:`~thalos_bot.skills.screen`) or
``refused`` (its name looks like a trusted skill's; no review can accept it).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, cast

import aiosqlite

from thalos_bot.skills.manifest import Manifest, PinnedFile
from thalos_bot.storage.database import Database, decode_time, encode_time, fetch_all

LEGACY = "legacy:"
"""The prefix of a pin made by the migration: the digest of ``SKILL.md`` alone."""

HoldReason = Literal["new", "changed", "flagged", "refused"]


@dataclass(frozen=True, slots=True)
class Pin:
    name: str
    digest: str
    files: tuple[PinnedFile, ...]
    accepted_at: datetime
    accepted_by: str
    """``operator`` (a review), ``first-sync`` (a fresh install) or ``upgrade``."""

    @property
    def legacy_sha256(self) -> str | None:
        """The ``SKILL.md`` digest of a pin from before pinning, else None."""
        return self.digest.removeprefix(LEGACY) if self.digest.startswith(LEGACY) else None

    @classmethod
    def of(cls, name: str, manifest: Manifest, at: datetime, by: str) -> Pin:
        return cls(name, manifest.digest, manifest.files, at, by)


@dataclass(frozen=True, slots=True)
class Hold:
    name: str
    reason: HoldReason
    digest: str
    source: str
    details: tuple[str, ...] = ()
    seen_at: datetime | None = None


def _files_json(files: Sequence[PinnedFile]) -> str:
    return json.dumps(
        [{"path": f.path, "sha256": f.sha256, "size": f.size, "text": f.text} for f in files]
    )


def _files(raw: str) -> tuple[PinnedFile, ...]:
    items = json.loads(raw)
    return tuple(
        PinnedFile(str(i["path"]), str(i["sha256"]), int(i["size"]), i.get("text")) for i in items
    )


def _pin(row: sqlite3.Row) -> Pin:
    return Pin(
        row["name"],
        row["digest"],
        _files(row["files"]),
        decode_time(row["accepted_at"]),
        row["accepted_by"],
    )


def _hold(row: sqlite3.Row) -> Hold:
    return Hold(
        row["name"],
        cast("HoldReason", row["reason"]),
        row["digest"],
        row["source"],
        tuple(json.loads(row["details"])),
        decode_time(row["seen_at"]),
    )


_UPSERT_PIN = """
INSERT INTO skill_pins (name, digest, files, accepted_at, accepted_by) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET
    digest = excluded.digest, files = excluded.files,
    accepted_at = excluded.accepted_at, accepted_by = excluded.accepted_by
"""


async def write_pins(conn: aiosqlite.Connection, pins: Sequence[Pin]) -> None:
    for pin in pins:
        await conn.execute(
            _UPSERT_PIN,
            (
                pin.name,
                pin.digest,
                _files_json(pin.files),
                encode_time(pin.accepted_at),
                pin.accepted_by,
            ),
        )


async def replace_holds(conn: aiosqlite.Connection, holds: Sequence[Hold], now: datetime) -> None:
    """Make ``holds`` the whole set of holds (a sync sees every skill)."""
    await conn.execute("DELETE FROM skill_holds")
    for hold in holds:
        await conn.execute(
            "INSERT INTO skill_holds (name, reason, digest, source, details, seen_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (
                hold.name,
                hold.reason,
                hold.digest,
                hold.source,
                json.dumps(list(hold.details)),
                encode_time(hold.seen_at or now),
            ),
        )


class PinStore:
    """Pins and holds in the shared :class:`~thalos_bot.storage.database.Database`."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def pins(self) -> dict[str, Pin]:
        async with self._db.read() as conn:
            rows = await fetch_all(conn, "SELECT * FROM skill_pins ORDER BY name")
        return {row["name"]: _pin(row) for row in rows}

    async def holds(self) -> list[Hold]:
        async with self._db.read() as conn:
            rows = await fetch_all(conn, "SELECT * FROM skill_holds ORDER BY name")
        return [_hold(row) for row in rows]

    async def accept(self, pin: Pin) -> None:
        """Record ``pin`` as accepted and lift the skill's hold."""
        async with self._db.transaction() as conn:
            await write_pins(conn, [pin])
            await conn.execute("DELETE FROM skill_holds WHERE name = ?", (pin.name,))
