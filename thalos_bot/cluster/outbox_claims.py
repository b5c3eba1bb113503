"""Outbox rows claimed by one replica at a time: ``FOR UPDATE SKIP LOCKED`` and a token.

One process hands every pending row back to its channel at start-up
(:meth:`thalos_bot.service.outbox.Outbox.running`). Among replicas, a replica starting
must not take a row another live one is delivering right now. :meth:`ClaimingOutbox.
pending` therefore returns only the rows it could claim: unclaimed rows older than
``span`` (a turn's own replica delivers its final at once; the span is its head start),
or rows whose claim ran out, or rows of a conversation whose lease ran out in the hands
of the replica delivering them (it died: the next one need not wait for the span; the
lanes of Telegram's webhooks and of Slack's, Discord's and Matrix's turns on any replica are
their conversations), except a conversation whose messages only the connection's
holder may run (owner-only: Matrix's encrypted rooms), claimed only by that holder.
``SKIP LOCKED`` lets replicas starting together split the
rows instead of queueing on each other's locks; each claim increments the row's token,
and :meth:`ClaimingOutbox.claim_token` tells which claim is the current one. A row taken
over keeps its ``progress``: the Telegram channel's check of a send in doubt reads it
before sending again, exactly as after a restart.

Each live replica also sweeps every quarter of ``span``, or every ``lease`` (the
connection lease, which the lanes of Slack's and Discord's turns run on) when that is
shorter (:meth:`thalos_bot.service.outbox.Outbox.running`): it renews the claims on the
rows it is delivering (:meth:`ClaimingOutbox.hold`; its own live finals too, which it
never claimed), so a slow delivery (a long 429 wait) is not taken over while its replica
lives, then claims what ran out, so a dead replica's rows are delivered by a replica
already running, not only by the next one to start, about a lease after its lease ran
out (a quarter of the span is 15 s: the answer a dead replica left waiting out a 429
came that much after the wait was over).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import timedelta

from thalos_bot.domain.ids import ChannelId
from thalos_bot.storage.outbox import OutboxRow
from thalos_bot.storage.pg.database import PgDatabase, fetch_all, fetch_one
from thalos_bot.storage.pg.outbox import PgOutbox, _row


class ClaimingOutbox(PgOutbox):
    def __init__(
        self, db: PgDatabase, replica: str, span: float, *, lease: float | None = None
    ) -> None:
        super().__init__(db)
        self._db = db
        self.replica = replica
        self.span = timedelta(seconds=span)
        self.sweep_every = span / 4 if lease is None else min(span / 4, lease)

    async def pending(self, channel_id: ChannelId) -> list[OutboxRow]:
        """Claim the channel's pending rows nobody is delivering; oldest first."""
        async with self._db.transaction() as conn:
            rows = await fetch_all(
                conn,
                "WITH free AS (SELECT id FROM outbox o WHERE state = 'pending'"
                " AND channel_id = %s AND (claimed_until < now()"
                " OR (claimed_until IS NULL AND created_at < now() - %s)"
                # Its conversation's lease ran out under the replica delivering it: that
                # one died or stalled (and a stalled one's sends there are dropped).
                " OR EXISTS (SELECT 1 FROM conversation_leases l"
                " WHERE l.channel_id = o.channel_id AND l.lane = o.conversation_id"
                " AND l.holder IS NOT NULL AND l.expires_at <= now()"
                " AND (o.claimed_by IS NULL OR l.holder = o.claimed_by)))"
                # An owner-only conversation's (a Matrix room encrypted with the keys the
                # connection's holder has): only that holder can send there.
                " AND (NOT EXISTS (SELECT 1 FROM connection_seen s"
                " WHERE s.channel_id = o.channel_id AND s.conversation_id = o.conversation_id"
                " AND s.owner_only) OR EXISTS (SELECT 1 FROM connection_leases c"
                " WHERE c.channel_id = o.channel_id AND c.holder = %s AND c.expires_at > now()))"
                " ORDER BY created_at, position FOR UPDATE SKIP LOCKED)"
                " UPDATE outbox o SET claimed_by = %s, claim_token = o.claim_token + 1,"
                " claimed_until = now() + %s FROM free WHERE o.id = free.id RETURNING o.*",
                (channel_id, self.span, self.replica, self.replica, self.span),
            )
        rows.sort(key=lambda r: (r["created_at"], r["position"]))
        return [_row(r) for r in rows]

    async def hold(self, row_ids: Collection[str]) -> None:
        """Renew the claim on ``row_ids`` (being delivered here) for another ``span``:
        rows still pending that nobody else claimed since (a row this replica wrote and
        never claimed becomes its claim, its token unchanged)."""
        if not row_ids:
            return
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE outbox SET claimed_by = %s, claimed_until = now() + %s"
                " WHERE id = ANY(%s) AND state = 'pending'"
                " AND (claimed_by IS NULL OR claimed_by = %s)",
                (self.replica, self.span, sorted(row_ids), self.replica),
            )

    async def claim_token(self, row_id: str) -> tuple[str | None, int]:
        """Who claimed the row last, and the claim's token."""
        async with self._db.read() as conn:
            row = await fetch_one(
                conn, "SELECT claimed_by, claim_token FROM outbox WHERE id = %s", (row_id,)
            )
        if row is None:
            return None, 0
        return row["claimed_by"], int(row["claim_token"])
