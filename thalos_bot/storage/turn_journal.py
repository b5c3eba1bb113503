"""The turns under way, kept on disk so that a process killed mid-turn is found out.

One daemon alone on SQLite: a transport that keeps a position (Telegram's getUpdates
offset, Matrix's sync token, Discord's catch-up marks, Slack's acknowledged envelopes,
Signal's subscription) has moved past a message once its turn begins, so the message is
not handed over again after a ``kill -9``; its turn, cut before its answer was kept, would
be lost without a word. The pump notes each turn here as it begins; the turn's commit
forgets it in the same transaction as its answer's outbox row (the row names the entry:
:attr:`~thalos_bot.storage.protocol.OutboxAddress.begun`), and the pump forgets it once
the turn ended any other way while the process ran. What a start-up finds here was cut
by a kill: its conversation is told to send the message again
(:mod:`thalos_bot.service.interrupted`), unless its source hands such a message over
again by itself (email's cursor stays below a mail until its answer is written): that
row is only forgotten.

Replicas (PostgreSQL) need none of it: the conversation leases say the same
(:attr:`thalos_bot.cluster.leases.Lease.interrupted`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from thalos_bot.domain.clock import utc_now
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.storage.database import Database, encode_time, fetch_all
from thalos_bot.storage.migrations import Migration

TURN_JOURNAL_MIGRATIONS: list[Migration] = [
    Migration(
        "0540_turns_begun",
        """
        CREATE TABLE turns_begun (
            id              INTEGER PRIMARY KEY AUTOINCREMENT,
            channel_id      TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            replayed        INTEGER NOT NULL CHECK (replayed IN (0, 1)),
            began_at        TEXT NOT NULL
        );
        """,
    ),
]


@dataclass(frozen=True, slots=True)
class CutTurn:
    """A turn a previous process began and never finished."""

    id: int
    channel_id: ChannelId
    conversation_id: ConversationId
    replayed: bool
    """Its source hands the message over again (nobody needs telling)."""


class TurnJournal(Protocol):
    async def begin(
        self, channel_id: ChannelId, conversation_id: ConversationId, *, replayed: bool
    ) -> int:
        """Note a turn that begins; returns its entry's id."""
        ...

    async def end(self, entry: int) -> None:
        """The turn's answer is kept, or it ended otherwise: forget it."""
        ...

    async def left(self, channels: Collection[ChannelId]) -> list[CutTurn]:
        """The turns begun in ``channels`` and never ended, oldest first."""
        ...


class SqliteTurnJournal:
    """:class:`TurnJournal` in the daemon's SQLite database."""

    def __init__(self, db: Database, clock: Callable[[], datetime] = utc_now) -> None:
        self._db = db
        self._clock = clock

    async def begin(
        self, channel_id: ChannelId, conversation_id: ConversationId, *, replayed: bool
    ) -> int:
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "INSERT INTO turns_begun (channel_id, conversation_id, replayed, began_at) "
                "VALUES (?, ?, ?, ?)",
                (channel_id, conversation_id, int(replayed), encode_time(self._clock())),
            )
            entry = cursor.lastrowid
        assert entry is not None, "an INSERT gives its row id"
        return int(entry)

    async def end(self, entry: int) -> None:
        async with self._db.transaction() as conn:
            await conn.execute("DELETE FROM turns_begun WHERE id = ?", (entry,))

    async def left(self, channels: Collection[ChannelId]) -> list[CutTurn]:
        wanted = set(channels)
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT id, channel_id, conversation_id, replayed FROM turns_begun ORDER BY id",
            )
        return [
            CutTurn(
                int(row["id"]),
                ChannelId(str(row["channel_id"])),
                ConversationId(str(row["conversation_id"])),
                bool(row["replayed"]),
            )
            for row in rows
            if row["channel_id"] in wanted
        ]
