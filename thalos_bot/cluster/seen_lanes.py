"""A connection channel's inbox run by any replica: each conversation by its lease holder.

The replica that owns the platform connection (Slack's socket, Discord's gateway,
Signal's event stream) only *stores* what it receives: a ``connection_seen`` row keyed
by the platform's id of the message (``ON CONFLICT DO NOTHING``: a redelivery runs
nothing) and a ``NOTIFY`` on the channel's own name (:func:`notify_channel`), in one
transaction. Every replica LISTENs (:class:`~thalos_bot.cluster.drain.InboxDrain`); the
one that holds the conversation's lease (``conversation_leases``, the conversation as
its lane, as Telegram's webhook chats) takes its rows in arrival order and runs them,
with a send-only client of the platform of its own. So a conversation's messages run
one at a time and in order, on one replica; different conversations on any.

A row is *taken* under the conversation lease's token (:meth:`SeenLeaseBook.take`),
then *done* (its payload dropped) in the commit of the turn that answers it
(:meth:`SeenLeaseBook.admit`, called by the session store's fence in the same
transaction: only while that token still holds the lane), or once the pump dealt with
it otherwise (:meth:`SeenLeaseBook.done`). Both match the row by its seq *and* the token
it was taken under. A row taken under an older token and not done (its runner died, or
stalled past its lease) is taken again by the lane's next holder and runs from the
start; the stalled runner's commit is refused. No "interrupted" notice is needed: the
turn is run again, not announced as cut.

*Owner-only* rows (``owner_only``): a message only the connection's owner can answer
(Matrix's encrypted rooms: the device's Olm and Megolm state is written only under the
connection lease's token, so only its holder can encrypt the answer). Only a replica
that holds the connection now sees such a row waiting, takes its lane, or takes the row
(checked in the statement that takes it), and the commit of its turn is also fenced by
the connection lease's token the row was taken under (``FOR SHARE``: a takeover of the
connection waits for it; a connection closed and opened again meanwhile has a new
token, and refused the turn's sends while it was closed). A replica holding such a lane
without the connection (it lost it, or the lane was taken for an unencrypted message
before), or whose turn there was refused, lets the lane go at its next renewal: the
lane's deliveries from there are dropped, the lane is announced as a stored row is (a
``NOTIFY``), and the owner takes the row again at once, under a new token, and runs it.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

import anyio
import structlog

from thalos_bot.cluster.inbox import InboxRow
from thalos_bot.cluster.leases import Lease, LeaseBook
from thalos_bot.cluster.taken_rows import TakenRows
from thalos_bot.storage.pg.database import Connection, PgDatabase, fetch_all, fetch_one

log = structlog.get_logger(__name__)

RUN_WITHIN = timedelta(hours=48)
"""A row waiting longer than this is not run any more (nobody expects that answer)."""
STAND_BY = 0.25
"""Seconds a replica lets pass per place it stands in a new conversation's order before
trying it (see :meth:`SeenLeaseBook.wait_before`): the first takes it at once."""
CONNECTION_HELD = (
    "SELECT 1 AS held FROM connection_leases WHERE channel_id = %s AND holder = %s"
    " AND token = %s AND expires_at > now() FOR SHARE"
)
"""Whether a replica still holds the channel's connection lease under a token (by the
server's clock; ``FOR SHARE``: a takeover waits for the transaction)."""
LOOK = (
    "SELECT EXISTS (SELECT 1 FROM connection_seen WHERE channel_id = %s"
    " AND conversation_id = %s AND owner_only AND payload IS NOT NULL"
    " AND seen_at > now() - %s) AS owner_only,"
    " EXISTS (SELECT 1 FROM conversation_leases WHERE channel_id = %s AND lane = %s"
    " AND holder IS NOT NULL AND holder <> %s AND expires_at > now()) AS held"
)
"""For a conversation not held here: whether it has an owner-only row not done, and
whether another live replica holds it (one statement, one round trip)."""
OWNER_ONLY_WAITING = (
    "SELECT DISTINCT conversation_id FROM connection_seen WHERE channel_id = %s"
    " AND conversation_id = ANY(%s) AND owner_only AND payload IS NOT NULL"
    " AND seen_at > now() - %s"
)
BOT = 0
"""The first part of the NOTIFY payload (``0:<conversation>``): the channel is in the
NOTIFY channel's name instead."""


def notify_channel(channel_id: str) -> str:
    """Where ``channel_id``'s stored rows are announced (a plug-in's name is a plain
    identifier)."""
    return f"thalos_seen_{channel_id}"


class SeenInbox:
    """``connection_seen`` as lanes, one per conversation (for the drain)."""

    bot = BOT

    def __init__(
        self,
        db: PgDatabase,
        channel_id: str,
        held: Mapping[str, int],
        book: SeenLeaseBook | None = None,
    ) -> None:
        """``held``: lane → the token this replica holds it with (the lease book's);
        ``book``: the lease book, whose ``owns`` says whether this replica holds the
        channel's connection now (it alone sees the owner-only rows)."""
        self._db = db
        self.channel_id = channel_id
        self._held = held
        self._book = book

    def _owns(self) -> bool:
        return self._book is not None and self._book.owns()

    async def put(
        self,
        conversation_id: str,
        ref: str,
        payload: Mapping[str, Any],
        *,
        owner_only: bool = False,
    ) -> bool:
        """Store a received message and tell the replicas; False when it was received
        before (by any owner of the connection: then it is not run again).
        ``owner_only``: only the connection's owner may run it (see the module)."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "WITH new AS (INSERT INTO connection_seen"
                " (channel_id, conversation_id, ref, payload, owner_only)"
                " VALUES (%s, %s, %s, %s, %s)"
                " ON CONFLICT DO NOTHING RETURNING conversation_id)"
                " SELECT pg_notify(%s, %s) FROM new",
                (
                    self.channel_id,
                    conversation_id,
                    ref,
                    json.dumps(dict(payload)),
                    owner_only,
                    notify_channel(self.channel_id),
                    f"{BOT}:{conversation_id}",
                ),
            )
            return cursor.rowcount == 1

    async def waiting(self, lane: str) -> list[InboxRow]:
        """The conversation's rows not done and not taken under the token this replica
        holds the lane with, in arrival order (the owner-only ones only while this
        replica holds the connection)."""
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT seq, payload FROM connection_seen WHERE channel_id = %s"
                " AND conversation_id = %s AND payload IS NOT NULL AND seen_at > now() - %s"
                " AND taken_token IS DISTINCT FROM %s AND (%s OR NOT owner_only) ORDER BY seq",
                (self.channel_id, lane, RUN_WITHIN, self._held.get(lane), self._owns()),
            )
        return [InboxRow(int(r["seq"]), lane, r["payload"]) for r in rows]

    async def lanes_waiting(self) -> list[str]:
        """Every conversation with a row not done (waiting, or taken by a runner that
        may have died: its lane's lease tells); with an owner-only row, only while this
        replica holds the connection."""
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT DISTINCT conversation_id FROM connection_seen WHERE channel_id = %s"
                " AND payload IS NOT NULL AND seen_at > now() - %s AND (%s OR NOT owner_only)",
                (self.channel_id, RUN_WITHIN, self._owns()),
            )
        return [str(r["conversation_id"]) for r in rows]

    async def prune(self) -> int:
        """Nothing: ``connection_seen`` rows are kept 30 days, pruned with the marks."""
        return 0


class SeenLeaseBook(LeaseBook):
    """Conversation leases whose rows are ``connection_seen``'s (see the module)."""

    def __init__(self, db: PgDatabase, channel_id: str, replica: str, seconds: float) -> None:
        super().__init__(db, channel_id, replica, seconds)
        self.owns: Callable[[], bool] = lambda: False
        """Whether this replica holds the channel's connection now."""
        self.alone = True
        """Whether no other replica sends for the channel now (the replicas table, at
        each heartbeat; until the first, as the drain's share of the rate assumes)."""
        self.senders: tuple[str, ...] = ()
        """The live replicas that send for the channel, and :attr:`owner`, the one
        holding its connection (None: nobody now), as read at the last heartbeat
        (:meth:`look`)."""
        self.owner: str | None = None
        self.taken = TakenRows(db, channel_id, self._holds)
        self.owner_rows: dict[tuple[int, int], int] = {}
        """(seq, token) of each owner-only row taken here and not admitted yet → the
        connection lease's token it was taken under: its turn is kept only while that
        token holds (a connection closed and opened again meanwhile has a new one, and
        the turn's sends while it was closed were refused)."""
        self._refused: set[str] = set()
        """Lanes whose owner-only turn was refused: let go at the next renewal, so that
        the row is taken again under a new token."""

    async def acquire(self, lane: str) -> Lease | None:
        """Hold ``lane``. One not held here yet is tried at once only by the replica
        that comes first in its order (:meth:`order`), and by the others a little later
        each, in case that one died (see :meth:`wait_before`).

        Every replica hears of each message: one that does not hold its conversation
        first looks, in one round trip, whether another live replica holds it or only
        the connection's owner may run it, and then gives up at once, without waiting
        its turn or locking anything."""
        if lane in self.held:
            return await super().acquire(lane)
        owner_only, held = await self._look(lane)
        if held or (owner_only and not self.owns()):
            return None  # another replica runs it, or the connection's owner
        # The owner comes last in the order, but only it may run an owner-only one.
        wait = 0.0 if owner_only else self.wait_before(lane)
        if wait:
            await anyio.sleep(wait)
        return await super().acquire(lane)  # sees one that took it meanwhile, unlocked

    async def _look(self, lane: str) -> tuple[bool, bool]:
        """Whether ``lane`` has an owner-only row not done, and whether another live
        replica holds it (:data:`LOOK`)."""
        async with self._db.single() as conn:
            row = await fetch_one(
                conn,
                LOOK,
                (self.channel_id, lane, RUN_WITHIN, self.channel_id, lane, self.replica),
            )
        assert row is not None  # a SELECT of two EXISTS always answers
        return bool(row["owner_only"]), bool(row["held"])

    def order(self, lane: str) -> list[str]:
        """Who should take the new conversation ``lane``: the replicas that send, by a
        hash of each one's name with the lane (rendezvous hashing: every replica reckons
        the same order, a conversation goes to one, and the conversations spread evenly
        without any replica waiting for another), the connection's owner last: it
        receives everything, and its turns would slow that (a stalled loop loses the
        connection's lease). An owner-only conversation is the owner's alone."""

        owner = self.replica if self.owns() else self.owner  # its own, known at once

        def rank(name: str) -> tuple[bool, int]:
            return name == owner, -zlib.crc32(f"{name}|{lane}".encode())

        return sorted(self.senders, key=rank)

    async def owner_only_free_in(self) -> dict[str, float]:
        """Each conversation with an owner-only row not done → the seconds until its
        lease is free for this replica by the server's clock (0: nobody else holds it
        now). A new owner of the connection reads it to take at once what an earlier
        owner left, and the rest as soon as the lease left with it runs out."""
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT s.conversation_id, COALESCE(EXTRACT(EPOCH FROM l.expires_at - now()), 0)"
                " AS free_in FROM (SELECT DISTINCT conversation_id FROM connection_seen"
                " WHERE channel_id = %s AND owner_only AND payload IS NOT NULL"
                " AND seen_at > now() - %s) AS s LEFT JOIN conversation_leases AS l"
                " ON l.channel_id = %s AND l.lane = s.conversation_id AND l.holder <> %s"
                " AND l.expires_at > now()",
                (self.channel_id, RUN_WITHIN, self.channel_id, self.replica),
            )
        return {str(r["conversation_id"]): float(r["free_in"]) for r in rows}

    async def renew(self) -> set[str]:
        """Extend the leases held; return those lost, and those let go: with an
        owner-only row while this replica does not hold the connection now (once no
        plain turn of it runs here), or whose owner-only turn was refused (announced:
        the owner takes them again at once under a new token, and runs their rows
        again)."""
        lost = await super().renew()
        let_go, self._refused = self._refused & set(self.held), set()
        if not self.owns() and self.held:
            async with self._db.read() as conn:
                rows = await fetch_all(
                    conn, OWNER_ONLY_WAITING, (self.channel_id, sorted(self.held), RUN_WITHIN)
                )
            let_go |= {
                lane
                for lane in (str(r["conversation_id"]) for r in rows)
                # A plain turn running there finishes first (cut, it would run again).
                if all(row in self.owner_rows for row in self.taken.rows.get(lane, []))
            }
        if let_go:
            log.info("connection_owner_only_let_go", channel=self.channel_id, count=len(let_go))
            # Announced as a stored row is: the connection's owner takes them now.
            await self.release(let_go, wake=(notify_channel(self.channel_id), f"{BOT}:"))
        return lost | let_go

    def wait_before(self, lane: str) -> float:
        """Seconds to let pass before trying ``lane``, not held here:
        :data:`STAND_BY` for each replica before this one in the lane's :meth:`order`
        (one not in it yet, just started: after all of them). Zero while no other
        replica sends: there is nobody to spread to."""
        if self.alone:
            return 0.0
        order = self.order(lane)
        place = order.index(self.replica) if self.replica in order else len(order)
        return STAND_BY * place

    async def look(self, alive: timedelta) -> None:
        """Read who sends for the channel now (:attr:`senders`: the replicas table's
        rows ``<replica>/<channel>`` heard from within ``alive``) and who holds its
        connection (:attr:`owner`)."""
        suffix = f"/{self.channel_id}"
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT id FROM replicas WHERE intake = %s AND seen_at > now() - %s",
                (f"{self.channel_id}-send", alive),
            )
            owner = await fetch_one(
                conn,
                "SELECT holder FROM connection_leases WHERE channel_id = %s AND expires_at > now()",
                (self.channel_id,),
            )
        senders = tuple(
            sorted(str(r["id"]).removesuffix(suffix) for r in rows if str(r["id"]).endswith(suffix))
        )
        holder = None if owner is None else str(owner["holder"])
        if (senders, holder) != (self.senders, self.owner):
            log.info(
                "connection_senders", channel=self.channel_id, senders=len(senders), owner=holder
            )
        self.senders, self.owner = senders, holder

    async def take(self, lease: Lease, update_id: int, bot: int) -> bool:
        """Take row ``update_id`` (its seq) under ``lease``, if it still holds and the row
        is not done nor taken under this token already."""
        async with self._db.transaction() as conn:
            if not await self._holds(conn, lease.lane, lease.token):
                self.held.pop(lease.lane, None)
                return False
            row = await fetch_one(
                conn,
                "WITH old AS (SELECT seq, taken_token, owner_only FROM connection_seen"
                " WHERE channel_id = %s AND conversation_id = %s AND seq = %s"
                " AND payload IS NOT NULL AND taken_token IS DISTINCT FROM %s"
                " AND (NOT owner_only OR EXISTS (SELECT 1 FROM connection_leases l"
                " WHERE l.channel_id = %s AND l.holder = %s AND l.expires_at > now()))"
                " FOR UPDATE)"
                " UPDATE connection_seen AS c SET taken_token = %s FROM old"
                " WHERE c.channel_id = %s AND c.seq = old.seq"
                " RETURNING old.taken_token IS NOT NULL AS retaken, old.owner_only,"
                " (SELECT l.token FROM connection_leases l WHERE l.channel_id = c.channel_id)"
                " AS connection_token",
                (
                    self.channel_id,
                    lease.lane,
                    update_id,
                    lease.token,
                    self.channel_id,
                    self.replica,
                    lease.token,
                    self.channel_id,
                ),
            )
        if row is None:
            return False
        if row["retaken"]:
            # Its runner died or stalled before its turn was kept: it runs again here.
            log.info("connection_message_taken_over", channel=self.channel_id, lane=lease.lane)
        if row["owner_only"]:
            self.owner_rows[update_id, lease.token] = int(row["connection_token"])
        self.taken.add(lease.lane, update_id, lease.token)
        return True

    async def untake(self, lane: str, update_id: int, bot: int) -> None:
        """Nothing to put back: a row taken and never run is taken again by the lane's
        next holder (its token is newer)."""

    async def settle(self, lane: str) -> None:
        """No ``turn_update`` is kept here (a cut turn runs again instead)."""

    async def done(self, conversation_id: str, seq: int, token: int) -> None:
        """The pump dealt with row ``seq`` taken under ``token`` (see
        :meth:`~thalos_bot.cluster.taken_rows.TakenRows.done`)."""
        self.owner_rows.pop((seq, token), None)
        await self.taken.done(conversation_id, seq, token)

    async def admit_turn(self, conn: Connection, conversation_id: str) -> bool:
        """Inside the commit of a turn of ``conversation_id``: kept only while the lane's
        token its row was taken under still holds; a stalled runner's is refused (the
        next holder took the row again; see
        :meth:`~thalos_bot.cluster.taken_rows.TakenRows.admit`). An owner-only row's
        turn is kept only while this replica also holds the connection (``FOR SHARE``):
        else refused, and its row runs again on the connection's owner."""
        taken = self.taken.rows.get(conversation_id)
        connection = self.owner_rows.pop(taken[0], None) if taken else None
        if taken and connection is not None:
            held = await fetch_one(
                conn, CONNECTION_HELD, (self.channel_id, self.replica, connection)
            )
            if held is None:
                seq, token = taken.pop(0)
                if not taken:
                    self.taken.rows.pop(conversation_id, None)
                self._refused.add(conversation_id)
                log.warning(
                    "connection_owner_only_turn_fenced",
                    channel=self.channel_id,
                    token=token,
                    seq=seq,
                )
                return False
        return await self.taken.admit(conn, conversation_id)


class SeenFence:
    """What the session store's fence asks for a turn of such a channel."""

    def __init__(self, book: SeenLeaseBook) -> None:
        self.book = book
        self.channel_id = book.channel_id

    async def admit(self, conn: Connection, conversation_id: str) -> bool:
        return await self.book.admit_turn(conn, conversation_id)
