"""One turn at a time per conversation across replicas: a lease with a fencing token.

A *lane* is what one lease covers (for Telegram, a chat: its updates are ordered per
chat). The holder renews every lease it holds in one statement per heartbeat. Taking a
lease whose holder is gone (released, or expired by the server's clock) increments its
token; a replica that stalled past its lease and wakes up still has the old token, and
every write it then attempts is refused:

- :meth:`LeaseBook.take` marks an inbox row taken only while the token holds, in the
  same transaction, so an update is handed to exactly one turn;
- :meth:`LeaseBook.admit` is called inside the turn's commit (the transaction that also
  writes its outbox row): a stale token writes neither history nor a final.

The lease row also says which update's turn is in progress (``turn_update``). A takeover
that finds one reports it (:attr:`Lease.interrupted`), so the new holder sends one
"interrupted, please resend" notice instead of running that turn a second time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from time import monotonic
from typing import Protocol

import structlog

from thalos_bot.domain.ids import SessionId
from thalos_bot.storage.pg.database import Connection, PgDatabase, fetch_all, fetch_one
from thalos_bot.storage.protocol import OutboxAddress

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Lease:
    lane: str
    token: int
    interrupted: int | None = None
    """The update whose turn the previous holder had begun and not finished."""


class LeaseBook:
    """The leases one replica holds on one channel's lanes."""

    def __init__(
        self,
        db: PgDatabase,
        channel_id: str,
        replica: str,
        seconds: float,
        lane_of: Callable[[str], str] = lambda conversation: conversation,
    ) -> None:
        self._db = db
        self.channel_id = channel_id
        self.replica = replica
        self.span = timedelta(seconds=seconds)
        self._lane_of = lane_of
        self.held: dict[str, int] = {}
        """lane → token, as this replica last knew it."""
        self._valid: dict[str, float] = {}
        """lane → this process's monotonic time until which the lease surely holds
        (measured from before the statement that took or renewed it)."""

    def fresh(self, lane: str) -> bool:
        """Still surely held by this replica's own clock: False once a renewal is
        overdue (e.g. the process was stopped), before any database says so."""
        return lane in self.held and monotonic() < self._valid.get(lane, 0.0)

    async def acquire(self, lane: str) -> Lease | None:
        """Hold ``lane`` (a new token when taken from someone else or after a release);
        None while another live replica holds it.

        That is seen first without a lock: a replica that heard of a lane another holds
        (every replica hears of each message) neither waits for the holder's commits
        nor writes (a row lock is a write, and its commit waits for the disk)."""
        began = monotonic()
        async with self._db.transaction() as conn:
            seen = await fetch_one(
                conn,
                "SELECT holder FROM conversation_leases WHERE channel_id = %s AND lane = %s"
                " AND holder IS NOT NULL AND holder <> %s AND expires_at > now()",
                (self.channel_id, lane, self.replica),
            )
            if seen is not None:
                return None
            await conn.execute(
                "INSERT INTO conversation_leases (channel_id, lane) VALUES (%s, %s)"
                " ON CONFLICT DO NOTHING",
                (self.channel_id, lane),
            )
            row = await fetch_one(
                conn,
                "SELECT holder, token, turn_update, expires_at <= now() AS expired"
                " FROM conversation_leases WHERE channel_id = %s AND lane = %s FOR UPDATE",
                (self.channel_id, lane),
            )
            assert row is not None  # inserted above, never deleted
            holder, token = row["holder"], int(row["token"])
            if holder == self.replica and not row["expired"] and self.held.get(lane) == token:
                return Lease(lane, token)  # held, and renewed by the heartbeat
            if holder is not None and holder != self.replica and not row["expired"]:
                return None
            interrupted = row["turn_update"]
            await conn.execute(
                "UPDATE conversation_leases SET holder = %s, token = token + 1,"
                " expires_at = now() + %s, turn_update = NULL"
                " WHERE channel_id = %s AND lane = %s",
                (self.replica, self.span, self.channel_id, lane),
            )
        lease = Lease(lane, token + 1, None if interrupted is None else int(interrupted))
        self.held[lane] = lease.token
        self._valid[lane] = began + self.span.total_seconds()
        log.info(
            "lease_taken",
            lane=lane,
            token=lease.token,
            previous=holder,
            interrupted=lease.interrupted,
        )
        return lease

    async def take(self, lease: Lease, update_id: int, bot: int) -> bool:
        """Mark inbox row ``update_id`` taken and its turn begun, if ``lease`` still
        holds and nobody took the row; False otherwise (then nothing changed)."""
        async with self._db.transaction() as conn:
            if not await self._holds(conn, lease.lane, lease.token):
                self.held.pop(lease.lane, None)
                return False
            cursor = await conn.execute(
                "UPDATE webhook_inbox SET taken_at = now(), taken_token = %s"
                " WHERE bot = %s AND update_id = %s AND taken_at IS NULL",
                (lease.token, bot, update_id),
            )
            if cursor.rowcount != 1:
                return False
            await conn.execute(
                "UPDATE conversation_leases SET turn_update = %s"
                " WHERE channel_id = %s AND lane = %s",
                (update_id, self.channel_id, lease.lane),
            )
        return True

    async def settle(self, lane: str) -> None:
        """No turn in progress on ``lane`` any more (only while still holding it)."""
        token = self.held.get(lane)
        if token is None:
            return
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE conversation_leases SET turn_update = NULL"
                " WHERE channel_id = %s AND lane = %s AND holder = %s AND token = %s",
                (self.channel_id, lane, self.replica, token),
            )

    async def orphaned(self) -> list[str]:
        """Lanes whose holder is gone (released, or its lease ran out) in the middle of
        a turn. Nobody would speak there until the person wrote again; a sweep takes
        them, so the taker says at once that the turn was interrupted."""
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT lane FROM conversation_leases WHERE channel_id = %s"
                " AND turn_update IS NOT NULL AND (holder IS NULL OR expires_at <= now())"
                " ORDER BY lane",
                (self.channel_id,),
            )
        return [str(row["lane"]) for row in rows]

    async def renew(self) -> set[str]:
        """Extend every lease still held; return the lanes lost since the last renewal
        (taken over after this replica stalled)."""
        began = monotonic()
        # Only what was held when the renewal began can be lost by it: a lane acquired
        # while its statement runs is missing from its answer (that race once fenced a
        # fresh lease's first turn, which nobody then answered).
        asked = dict(self.held)
        async with self._db.transaction() as conn:
            rows = await fetch_all(
                conn,
                "UPDATE conversation_leases SET expires_at = now() + %s"
                " WHERE channel_id = %s AND holder = %s AND expires_at > now()"
                " RETURNING lane, token",
                (self.span, self.channel_id, self.replica),
            )
        still = {str(r["lane"]): int(r["token"]) for r in rows}
        lost = {
            lane
            for lane, token in asked.items()
            if still.get(lane) != token and self.held.get(lane) == token
        }
        for lane in lost:
            self.held.pop(lane, None)
            log.warning("lease_lost", lane=lane)
        for lane, token in still.items():
            if self.held.get(lane) == token:
                self._valid[lane] = began + self.span.total_seconds()
        return lost

    async def untake(self, lane: str, update_id: int, bot: int) -> None:
        """Put back inbox row ``update_id``, taken on ``lane`` but never read by the pump
        (this replica stopped first): the next holder takes it and runs its turn, rather
        than saying it was interrupted. Only while holding the lane."""
        token = self.held.get(lane)
        if token is None:
            return
        async with self._db.transaction() as conn:
            if not await self._holds(conn, lane, token):
                return
            await conn.execute(
                "UPDATE webhook_inbox SET taken_at = NULL, taken_token = NULL"
                " WHERE bot = %s AND update_id = %s AND taken_token = %s",
                (bot, update_id, token),
            )
            await conn.execute(
                "UPDATE conversation_leases SET turn_update = NULL"
                " WHERE channel_id = %s AND lane = %s AND turn_update = %s",
                (self.channel_id, lane, update_id),
            )
        log.info("lease_update_put_back", lane=lane, update_id=update_id)

    async def release(
        self, lanes: set[str] | None = None, *, wake: tuple[str, str] | None = None
    ) -> int:
        """Give up ``lanes`` (all held by default): the next replica takes them at once.
        A turn still in progress stays recorded, so its taker says it was interrupted.
        ``wake``: a NOTIFY channel and a payload's prefix; each lane released is
        announced there (``<prefix><lane>``, in the same transaction), so that the
        replicas hearing it look at it now rather than at their next sweep."""
        chosen = set(self.held) if lanes is None else lanes & set(self.held)
        if not chosen:
            log.info("leases_released", count=0)
            return 0
        channel, prefix = wake or ("", "")
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "WITH freed AS (UPDATE conversation_leases SET holder = NULL,"
                " expires_at = now() WHERE channel_id = %s AND holder = %s"
                " AND lane = ANY(%s) RETURNING lane)"
                " SELECT CASE WHEN %s THEN pg_notify(%s, %s || lane) END FROM freed",
                (self.channel_id, self.replica, sorted(chosen), wake is not None, channel, prefix),
            )
        for lane in chosen:
            self.held.pop(lane, None)
        log.info("leases_released", count=cursor.rowcount)
        return cursor.rowcount

    async def admit(
        self, conn: Connection, session_id: SessionId, address: OutboxAddress | None
    ) -> bool:
        """Inside a turn's commit: True when the turn may be written. A turn of this
        channel may be written only while this replica holds its lane with the token it
        had (``FOR SHARE``: a takeover waits for this commit to end)."""
        conversation: str | None = None
        if address is not None:
            if address.channel_id != self.channel_id:
                return True
            conversation = address.conversation_id
        else:
            row = await fetch_one(
                conn,
                "SELECT conversation_id FROM conversation_bindings"
                " WHERE channel_id = %s AND session_id = %s LIMIT 1",
                (self.channel_id, session_id),
            )
            if row is None:
                return True
            conversation = str(row["conversation_id"])
        lane = self._lane_of(conversation)
        token = self.held.get(lane)
        if token is not None and await self._holds(conn, lane, token):
            return True
        log.warning("turn_commit_fenced", lane=lane, token=token)
        return False

    async def _holds(self, conn: Connection, lane: str, token: int) -> bool:
        row = await fetch_one(
            conn,
            "SELECT 1 AS held FROM conversation_leases WHERE channel_id = %s AND lane = %s"
            " AND holder = %s AND token = %s AND expires_at > now() FOR SHARE",
            (self.channel_id, lane, self.replica, token),
        )
        return row is not None


class ConnectionFence(Protocol):
    channel_id: str

    async def admit(self, conn: Connection, conversation_id: str) -> bool: ...


class FenceSlot:
    """The fence a session store is built with before the channels that hold the leases
    have opened: it admits everything until :attr:`book` is set (Telegram's webhook
    leases) or a connection channel's inbox is added to :attr:`connections`."""

    def __init__(self) -> None:
        self.book: LeaseBook | None = None
        self.connections: dict[str, ConnectionFence] = {}
        """channel → its inbox, for the channels that hold a platform connection."""

    async def admit(
        self, conn: Connection, session_id: SessionId, address: OutboxAddress | None
    ) -> bool:
        if self.connections:
            conversation = await self._connection_conversation(conn, session_id, address)
            if conversation is not None:
                channel, conversation_id = conversation
                return await self.connections[channel].admit(conn, conversation_id)
        if self.book is None:
            return True
        return await self.book.admit(conn, session_id, address)

    async def _connection_conversation(
        self, conn: Connection, session_id: SessionId, address: OutboxAddress | None
    ) -> tuple[str, str] | None:
        if address is not None:
            if address.channel_id in self.connections:
                return address.channel_id, address.conversation_id
            return None
        row = await fetch_one(
            conn,
            "SELECT channel_id, conversation_id FROM conversation_bindings"
            " WHERE session_id = %s AND channel_id = ANY(%s) LIMIT 1",
            (session_id, sorted(self.connections)),
        )
        return None if row is None else (str(row["channel_id"]), str(row["conversation_id"]))
