"""The outbox: final answers and notices that must reach a channel, kept until they have.

A row is written in the same transaction as the turn that produced it (see
:meth:`SqliteSessionStore.commit_turn`), or on its own for a detached result. It stays
``pending`` until the channel confirms it (``delivered``) or refuses it for good
(``failed``). ``progress`` is the channel's own note of how far a delivery got (for
Telegram: the parts already shown, and for a send in doubt the highest message id known
in the chat and the exact text sent), so a restarted daemon can check before it sends
again. Rows that are done are pruned after the configured time.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

import aiosqlite

from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.storage.database import Database, decode_time, encode_time, fetch_all, fetch_one
from thalos_bot.storage.migrations import Migration
from thalos_bot.storage.protocol import OutboxAddress, OutboxEntry, OutboxKind

OutboxState = Literal["pending", "delivered", "failed"]
Progress = Mapping[str, object]

OUTBOX_MIGRATIONS: list[Migration] = [
    Migration(
        "0510_outbox",
        """
        CREATE TABLE outbox (
            id              TEXT PRIMARY KEY NOT NULL,
            channel_id      TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            kind            TEXT NOT NULL CHECK (kind IN ('answer', 'notice')),
            text            TEXT NOT NULL,
            state           TEXT NOT NULL DEFAULT 'pending'
                            CHECK (state IN ('pending', 'delivered', 'failed')),
            progress        TEXT NOT NULL DEFAULT '{}',
            created_at      TEXT NOT NULL,
            updated_at      TEXT NOT NULL,
            done_at         TEXT
        );
        CREATE INDEX outbox_pending ON outbox (state, channel_id, created_at);
        CREATE INDEX outbox_done ON outbox (done_at);
        """,
    ),
    Migration(
        "0511_outbox_voice",
        # SQLite cannot change a CHECK: the table is rebuilt with the clips' kind.
        """
        CREATE TABLE outbox_next (
            id              TEXT PRIMARY KEY NOT NULL,
            channel_id      TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            kind            TEXT NOT NULL CHECK (kind IN ('answer', 'notice', 'voice')),
            text            TEXT NOT NULL,
            state           TEXT NOT NULL DEFAULT 'pending'
                            CHECK (state IN ('pending', 'delivered', 'failed')),
            progress        TEXT NOT NULL DEFAULT '{}',
            created_at      TEXT NOT NULL,
            updated_at      TEXT NOT NULL,
            done_at         TEXT
        );
        INSERT INTO outbox_next (id, channel_id, conversation_id, kind, text, state, progress,
                                 created_at, updated_at, done_at)
            SELECT id, channel_id, conversation_id, kind, text, state, progress,
                   created_at, updated_at, done_at
            FROM outbox ORDER BY rowid;
        DROP TABLE outbox;
        ALTER TABLE outbox_next RENAME TO outbox;
        CREATE INDEX outbox_pending ON outbox (state, channel_id, created_at);
        CREATE INDEX outbox_done ON outbox (done_at);
        """,
    ),
]


@dataclass(frozen=True, slots=True)
class OutboxRow:
    id: str
    channel_id: ChannelId
    conversation_id: ConversationId
    kind: OutboxKind
    text: str
    state: OutboxState
    created_at: datetime
    progress: Progress = field(default_factory=dict)

    @property
    def address(self) -> OutboxAddress:
        return OutboxAddress(self.channel_id, self.conversation_id, self.id)


async def insert_row(conn: aiosqlite.Connection, entry: OutboxEntry, at: datetime) -> None:
    """Add ``entry`` as a pending row, inside the caller's transaction."""
    stamp = encode_time(at)
    address = entry.address
    await conn.execute(
        "INSERT INTO outbox (id, channel_id, conversation_id, kind, text, created_at,"
        " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            address.key,
            address.channel_id,
            address.conversation_id,
            entry.kind,
            entry.text,
            stamp,
            stamp,
        ),
    )
    if address.begun is not None:  # the turn is kept: no longer cut if the process dies
        await conn.execute("DELETE FROM turns_begun WHERE id = ?", (address.begun,))


class OutboxStore(Protocol):
    """The outbox rows, in whichever database the store uses."""

    async def add(self, entry: OutboxEntry, at: datetime) -> None: ...

    async def get(self, row_id: str) -> OutboxRow | None: ...

    async def pending(self, channel_id: ChannelId) -> list[OutboxRow]:
        """The channel's pending rows, oldest first."""
        ...

    async def save_progress(self, row_id: str, progress: Progress, at: datetime) -> None:
        """Replace a pending row's progress; a row that is done keeps its own."""
        ...

    async def finish(self, row_id: str, state: OutboxState, at: datetime) -> None:
        """Mark a pending row ``delivered`` or ``failed``."""
        ...

    async def prune(self, before: datetime) -> int:
        """Delete the rows done before ``before``; return how many."""
        ...

    async def kept(self, row_ids: Collection[str]) -> set[str]:
        """Those of ``row_ids`` still pending (their clip files are still needed)."""
        ...


@runtime_checkable
class ClaimingStore(OutboxStore, Protocol):
    """An outbox shared by replicas, whose rows are claimed by the one delivering them
    (:class:`thalos_bot.cluster.outbox_claims.ClaimingOutbox`): :meth:`pending` returns
    only the rows it could claim, and a claim runs out unless renewed."""

    sweep_every: float
    """Seconds between two sweeps: renew this replica's claims, claim what ran out."""

    async def hold(self, row_ids: Collection[str]) -> None:
        """Renew the claim on ``row_ids`` (rows this replica is delivering), still
        pending and claimed by nobody else."""
        ...


class SqliteOutbox:
    """The outbox rows in the shared :class:`Database`."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, entry: OutboxEntry, at: datetime) -> None:
        async with self._db.transaction() as conn:
            await insert_row(conn, entry, at)

    async def get(self, row_id: str) -> OutboxRow | None:
        async with self._db.read() as conn:
            row = await fetch_one(conn, "SELECT * FROM outbox WHERE id = ?", (row_id,))
        return None if row is None else _row(row)

    async def pending(self, channel_id: ChannelId) -> list[OutboxRow]:
        """The channel's pending rows, oldest first."""
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT * FROM outbox WHERE state = 'pending' AND channel_id = ?"
                " ORDER BY created_at, rowid",
                (channel_id,),
            )
        return [_row(r) for r in rows]

    async def save_progress(self, row_id: str, progress: Progress, at: datetime) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE outbox SET progress = ?, updated_at = ? WHERE id = ? AND state = 'pending'",
                (json.dumps(progress, sort_keys=True), encode_time(at), row_id),
            )

    async def finish(self, row_id: str, state: OutboxState, at: datetime) -> None:
        """Mark the row ``delivered`` or ``failed``; it is pruned after the keep time."""
        stamp = encode_time(at)
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE outbox SET state = ?, updated_at = ?, done_at = ?"
                " WHERE id = ? AND state = 'pending'",
                (state, stamp, stamp, row_id),
            )

    async def prune(self, before: datetime) -> int:
        """Delete the rows done before ``before``; return how many."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "DELETE FROM outbox WHERE state <> 'pending' AND done_at < ?",
                (encode_time(before),),
            )
            return cursor.rowcount

    async def kept(self, row_ids: Collection[str]) -> set[str]:
        wanted = sorted(set(row_ids))
        if not wanted:
            return set()
        marks = ", ".join("?" for _ in wanted)
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                f"SELECT id FROM outbox WHERE state = 'pending' AND id IN ({marks})",  # noqa: S608
                tuple(wanted),
            )
        return {r["id"] for r in rows}


def kind_of(value: object) -> OutboxKind:
    """A stored row's kind (an unknown one reads as an answer, as before clips)."""
    if value == "notice":
        return "notice"
    return "voice" if value == "voice" else "answer"


def _row(row: sqlite3.Row) -> OutboxRow:
    kind = kind_of(row["kind"])
    state = row["state"]
    if state not in ("pending", "delivered", "failed"):
        raise ValueError(f"unknown outbox state {state!r}")
    progress = json.loads(row["progress"])
    return OutboxRow(
        id=row["id"],
        channel_id=ChannelId(row["channel_id"]),
        conversation_id=ConversationId(row["conversation_id"]),
        kind=kind,
        text=row["text"],
        state=state,
        created_at=decode_time(row["created_at"]),
        progress=progress if isinstance(progress, dict) else {},
    )
