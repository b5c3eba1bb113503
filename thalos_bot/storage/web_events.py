"""A web page's events in the daemon's SQLite file, numbered per conversation
(:class:`~thalos_bot.channels.page_events.SharedPageEvents`; on PostgreSQL,
:class:`~thalos_bot.cluster.page_events.PgPageEvents` keeps the same for every replica).

One process is the only writer, so nobody else's events are to be heard
(:meth:`SqlitePageEvents.listen` only says it listens). What is kept outlives a restart:
a page opened after it shows the conversation, and a final or a file whose outbox row
was confirmed is here, since the row is confirmed only once its event is written. At
the start (:meth:`SqlitePageEvents.started`) what belonged to the process that is gone
goes: the answers it was still writing (their turn, activity and partials) and its
approval questions, so a reloaded page shows nothing half-written and no button that
answers nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from thalos_bot.storage.database import Database, fetch_all, fetch_one
from thalos_bot.storage.migrations import Migration

WEB_EVENT_MIGRATIONS: list[Migration] = [
    Migration(
        "0770_web_events",
        """
        CREATE TABLE web_streams (
            conversation  TEXT PRIMARY KEY,
            last_seq      INTEGER NOT NULL
        );
        CREATE TABLE web_events (
            conversation  TEXT NOT NULL,
            seq           INTEGER NOT NULL,
            kind          TEXT NOT NULL,
            turn          TEXT,
            data          TEXT NOT NULL,
            PRIMARY KEY (conversation, seq)
        );
        CREATE TABLE web_media (
            key           TEXT PRIMARY KEY,
            conversation  TEXT NOT NULL,
            media_type    TEXT NOT NULL,
            data          BLOB NOT NULL,
            made          INTEGER NOT NULL
        );
        CREATE INDEX web_media_made ON web_media (conversation, made);
        """,
    ),
]

OPEN_TURNS = """
    DELETE FROM web_events WHERE kind IN ('turn', 'activity', 'partial')
    AND coalesce(turn, json_extract(data, '$.turn')) IN (
        SELECT json_extract(data, '$.turn') FROM web_events AS t WHERE t.kind = 'turn'
        AND NOT EXISTS (
            SELECT 1 FROM web_events AS f WHERE f.kind = 'final'
            AND f.conversation = t.conversation AND f.turn = json_extract(t.data, '$.turn')
        )
    )
"""
"""The events of the answers a gone process was still writing."""


@dataclass(frozen=True, slots=True)
class PageEvent:
    conversation: str
    seq: int
    kind: str
    data: dict[str, Any]
    turn: str | None


class SqlitePageEvents:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def started(self) -> None:
        """Forget what the gone process was showing and never finished."""
        async with self._db.transaction() as conn:
            await conn.execute(OPEN_TURNS)
            await conn.execute(
                "DELETE FROM web_events WHERE kind IN ('approval', 'approval_closed')"
            )

    async def append(
        self, conversation: str, kind: str, data: Mapping[str, Any], turn: str | None, keep: int
    ) -> int:
        """Store an event; its number. A partial replaces its turn's partial before it,
        and a final deletes it (a long answer is one row, not one per flush); at most
        ``keep`` numbers back are kept."""
        async with self._db.transaction() as conn:
            row = await fetch_one(
                conn,
                "INSERT INTO web_streams (conversation, last_seq) VALUES (?, 1)"
                " ON CONFLICT (conversation) DO UPDATE SET last_seq = last_seq + 1"
                " RETURNING last_seq",
                (conversation,),
            )
            assert row is not None
            seq = int(row["last_seq"])
            if kind in {"partial", "final"} and turn is not None:
                await conn.execute(
                    "DELETE FROM web_events WHERE conversation = ? AND turn = ?"
                    " AND kind = 'partial'",
                    (conversation, turn),
                )
            await conn.execute(
                "INSERT INTO web_events (conversation, seq, kind, turn, data)"
                " VALUES (?, ?, ?, ?, ?)",
                (conversation, seq, kind, turn, json.dumps(dict(data))),
            )
            await conn.execute(
                "DELETE FROM web_events WHERE conversation = ? AND seq <= ?",
                (conversation, seq - keep),
            )
        return seq

    async def listen(self, heard: Callable[[str | None], None]) -> None:
        """Listening, for ever: this process writes every event, and reads back its own."""
        heard(None)
        await anyio.sleep_forever()

    async def after(self, marks: Mapping[str, int]) -> list[PageEvent]:
        """The events of each conversation of ``marks`` after its number, in order."""
        found: list[PageEvent] = []
        async with self._db.read() as conn:
            for conversation, seq in marks.items():
                rows = await fetch_all(
                    conn,
                    "SELECT seq, kind, turn, data FROM web_events"
                    " WHERE conversation = ? AND seq > ? ORDER BY seq",
                    (conversation, seq),
                )
                found += [
                    PageEvent(
                        conversation,
                        int(r["seq"]),
                        str(r["kind"]),
                        json.loads(r["data"]),
                        None if r["turn"] is None else str(r["turn"]),
                    )
                    for r in rows
                ]
        return found

    async def keep_media(
        self, conversation: str, key: str, media_type: str, data: bytes, keep: int
    ) -> None:
        """Store a file a page shows; only the ``keep`` most recent of the conversation
        are kept."""
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO web_media (key, conversation, media_type, data, made)"
                " VALUES (?, ?, ?, ?, (SELECT coalesce(max(made), 0) + 1 FROM web_media))"
                " ON CONFLICT (key) DO NOTHING",
                (key, conversation, media_type, data),
            )
            await conn.execute(
                "DELETE FROM web_media WHERE conversation = ? AND key NOT IN"
                " (SELECT key FROM web_media WHERE conversation = ?"
                " ORDER BY made DESC LIMIT ?)",
                (conversation, conversation, keep),
            )

    async def media(self, conversation: str, key: str) -> tuple[str, bytes] | None:
        """A stored file of ``conversation`` (never another's)."""
        async with self._db.read() as conn:
            row = await fetch_one(
                conn,
                "SELECT media_type, data FROM web_media WHERE key = ? AND conversation = ?",
                (key, conversation),
            )
        return None if row is None else (str(row["media_type"]), bytes(row["data"]))
