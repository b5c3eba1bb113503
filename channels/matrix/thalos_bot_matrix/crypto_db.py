"""The end-to-end encryption store's rows: one private SQLite file (0600) in the state folder.

One row per thing that changes on its own: the device's Olm account, each Olm session
(by the other device's curve25519 key and the session's id), each Megolm session the bot
decrypts with (by room and session id), each room's outbound Megolm session and the
devices that were sent its key. A change writes its own rows in one transaction, never
the whole store; every function here blocks, and is called from a worker thread (see
:mod:`.crypto_store`), never on the event loop.

The whole-file store of earlier builds is moved in by :mod:`.crypto_store`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS olm_sessions (
    curve25519 TEXT NOT NULL, session_id TEXT NOT NULL, pickle TEXT NOT NULL,
    added INTEGER NOT NULL, PRIMARY KEY (curve25519, session_id));
CREATE TABLE IF NOT EXISTS inbound_group_sessions (
    room_id TEXT NOT NULL, session_id TEXT NOT NULL, pickle TEXT NOT NULL,
    sender_key TEXT NOT NULL DEFAULT '', sender_ed25519 TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (room_id, session_id));
CREATE TABLE IF NOT EXISTS outbound_group_sessions (
    room_id TEXT PRIMARY KEY, pickle TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS outbound_shared (
    room_id TEXT NOT NULL, device TEXT NOT NULL, PRIMARY KEY (room_id, device));
"""


@dataclass
class Rows:
    """What one transaction writes (pickles made on the loop, cheap: only what changed)."""

    meta: dict[str, str] = field(default_factory=dict)
    olm: list[tuple[str, str, str, int]] = field(default_factory=list)
    """(curve25519, session id, pickle, order added)."""
    inbound: list[tuple[str, str, str, str, str]] = field(default_factory=list)
    """(room id, session id, pickle, sender's curve25519 key, its claimed ed25519 key)."""
    outbound: list[tuple[str, str, float]] = field(default_factory=list)
    """(room id, pickle, created)."""
    shared: list[tuple[str, str]] = field(default_factory=list)
    """(room id, ``user|device``)."""
    dropped_outbound: list[str] = field(default_factory=list)
    """Rooms whose outbound session (and who had its key) is gone."""
    clear: bool = False
    """Everything of another device goes first."""

    def __bool__(self) -> bool:
        return bool(
            self.meta
            or self.olm
            or self.inbound
            or self.outbound
            or self.shared
            or self.dropped_outbound
            or self.clear
        )


@dataclass
class Loaded:
    """A database's content, as pickles."""

    meta: dict[str, str]
    olm: list[tuple[str, str, str, int]]
    """(curve25519, session id, pickle, order added), newest first."""
    inbound: list[tuple[str, str, str, str, str]]
    outbound: list[tuple[str, str, float]]
    shared: list[tuple[str, str]]


def connect(path: Path) -> sqlite3.Connection:
    """The database at ``path``, made private (0600, in a 0700 folder) if it is new."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        path.parent.chmod(0o700)
    # Created 0600 before SQLite opens it: its journal files take the same mode.
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")  # a key is on disk before the sync moves past it
    db.executescript(SCHEMA)
    return db


def read(db: sqlite3.Connection) -> Loaded:
    return Loaded(
        meta=dict(db.execute("SELECT name, value FROM meta").fetchall()),
        olm=db.execute(
            "SELECT curve25519, session_id, pickle, added FROM olm_sessions ORDER BY added DESC"
        ).fetchall(),
        inbound=db.execute(
            "SELECT room_id, session_id, pickle, sender_key, sender_ed25519"
            " FROM inbound_group_sessions"
        ).fetchall(),
        outbound=db.execute(
            "SELECT room_id, pickle, created FROM outbound_group_sessions"
        ).fetchall(),
        shared=db.execute("SELECT room_id, device FROM outbound_shared").fetchall(),
    )


def write(db: sqlite3.Connection, rows: Rows) -> None:
    """``rows`` in one transaction (all of it, or nothing after a kill)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        if rows.clear:
            for table in (
                "meta",
                "olm_sessions",
                "inbound_group_sessions",
                "outbound_group_sessions",
                "outbound_shared",
            ):
                db.execute(f"DELETE FROM {table}")  # noqa: S608 - the names above
        db.executemany("REPLACE INTO meta VALUES (?, ?)", rows.meta.items())
        db.executemany("REPLACE INTO olm_sessions VALUES (?, ?, ?, ?)", rows.olm)
        db.executemany("REPLACE INTO inbound_group_sessions VALUES (?, ?, ?, ?, ?)", rows.inbound)
        for room in rows.dropped_outbound:
            db.execute("DELETE FROM outbound_group_sessions WHERE room_id = ?", (room,))
            db.execute("DELETE FROM outbound_shared WHERE room_id = ?", (room,))
        db.executemany("REPLACE INTO outbound_group_sessions VALUES (?, ?, ?)", rows.outbound)
        db.executemany("REPLACE INTO outbound_shared VALUES (?, ?)", rows.shared)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
