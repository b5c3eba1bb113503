"""One owner per platform connection among replicas: a lease per channel, fenced.

A Discord gateway session, a Slack Socket Mode connection, a Matrix sync loop and a
Telegram long poll each deliver every event to every process that holds one: two
replicas holding one each answer everything twice. So among the replicas sharing a
PostgreSQL store, one holds the channel's *connection lease* and opens the channel; the
others stand by (:mod:`thalos_bot.service.standby`) and try to take it every
``poll_every`` seconds.

The holder renews every third of ``span`` (one ``UPDATE`` that matches only while its
token still holds and the lease has not run out by the server's clock). Taking the
lease increments its token, in the same single ``UPDATE``: of two replicas trying at
once exactly one gets the row. A holder that stalled past its lease (SIGSTOP, a network
cut) and wakes up finds its token gone at its next renewal; before that, :meth:`fresh`
(this process's monotonic clock, measured from before the last renewal) already says it
is no longer sure, and the host reads nothing more from the channel. A clean stop
releases the lease at once (:meth:`release`), so a standby takes it at its next try; a
``kill -9`` leaves it to run out after ``span``.

Each owner reads the platform from where *it* last was (Discord's catch-up reads the
history after the last message it admitted, a mark in its own state folder): an owner
that takes the connection back would receive again what another owner answered in the
meantime. So every message the connection hands over is recorded by its platform id
(``connection_seen``, the shared inbox of :mod:`thalos_bot.cluster.connection_inbox`;
:meth:`first_sight` when there is no inbox): one already seen under any owner is not
passed on again. Records are kept for :data:`SEEN_KEPT`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from time import monotonic
from typing import Any

import psycopg
import structlog

from thalos_bot.storage.pg.database import PgDatabase, fetch_all, fetch_one

log = structlog.get_logger(__name__)

SEEN_KEPT = timedelta(days=30)
"""How long a message's platform id is remembered as handed over."""

DEFAULT_SPAN = 4.0
"""Seconds a connection lease lasts unless renewed: the takeover time after a kill -9
is about this, plus a standby's next try, plus the platform's connect."""


@dataclass(frozen=True, slots=True)
class Owner:
    """Who holds a channel's connection, for ``status`` and the logs."""

    channel_id: str
    holder: str | None
    token: int
    since: datetime | None
    taken_over_at: datetime | None
    expired: bool


class ConnectionLease:
    """This replica's claim on one channel's platform connection."""

    def __init__(self, db: PgDatabase, channel_id: str, replica: str, span: float) -> None:
        self._db = db
        self.channel_id = channel_id
        self.replica = replica
        self.span = timedelta(seconds=span)
        self.renew_every = span / 3
        self.poll_every = min(1.0, span / 4)
        """How often a standby tries to take the lease."""
        self.token: int | None = None
        """The token this replica holds; None while it does not hold the lease."""
        self._valid = 0.0

    def fresh(self) -> bool:
        """Surely still held, by this process's clock: False once a renewal is overdue
        (the process was stopped, the database unreachable), before any store says so."""
        return self.token is not None and monotonic() < self._valid

    async def acquire(self) -> bool:
        """Take the lease when nobody holds it, or its holder let it run out; True when
        this replica holds it now (with a new token)."""
        began = monotonic()
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO connection_leases (channel_id) VALUES (%s) ON CONFLICT DO NOTHING",
                (self.channel_id,),
            )
            row = await fetch_one(
                conn,
                "WITH old AS (SELECT holder, expires_at <= now() AS expired"
                " FROM connection_leases WHERE channel_id = %s FOR UPDATE)"
                " UPDATE connection_leases l SET holder = %s, token = l.token + 1,"
                " expires_at = clock_timestamp() + %s, since = clock_timestamp(),"
                " taken_over_at = CASE"
                " WHEN old.holder IS NOT NULL AND old.holder <> %s THEN clock_timestamp()"
                " ELSE l.taken_over_at END"
                " FROM old WHERE l.channel_id = %s"
                " AND (old.holder IS NULL OR old.expired OR old.holder = %s)"
                " RETURNING l.token, old.holder AS previous,"
                " extract(epoch FROM l.expires_at - now())::float8 AS left_s",
                (
                    self.channel_id,
                    self.replica,
                    self.span,
                    self.replica,
                    self.channel_id,
                    self.replica,
                ),
            )
            if row is not None:
                await conn.execute(
                    "DELETE FROM connection_seen WHERE channel_id = %s AND seen_at < now() - %s",
                    (self.channel_id, SEEN_KEPT),
                )
        if row is None:
            return False
        self.token = int(row["token"])
        # The span counts from the update, after any wait for the row's lock (a stopped
        # owner's write holds it for up to STALLED_TRANSACTION_S); measured from the
        # transaction's start, which ``began`` precedes, this clock never runs past it.
        self._valid = began + float(row["left_s"])
        log.info(
            "connection_lease_taken",
            channel=self.channel_id,
            token=self.token,
            previous=row["previous"],
        )
        return True

    async def renew(self) -> bool:
        """Extend the lease; False when it is no longer this replica's (fenced: another
        replica took it after this one's ran out). Raises what psycopg raises when the
        database cannot be reached (then :meth:`fresh` decides)."""
        if self.token is None:
            return False
        began = monotonic()
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE connection_leases SET expires_at = now() + %s"
                " WHERE channel_id = %s AND holder = %s AND token = %s AND expires_at > now()",
                (self.span, self.channel_id, self.replica, self.token),
            )
        if cursor.rowcount != 1:
            log.warning("connection_lease_lost", channel=self.channel_id, token=self.token)
            self.token = None
            return False
        self._valid = began + self.span.total_seconds()
        return True

    async def first_sight(self, conversation_id: str, ref: str) -> bool:
        """Record message ``ref`` of ``conversation_id`` as handed over; False when some
        owner of this connection already handed it over."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "INSERT INTO connection_seen (channel_id, conversation_id, ref)"
                " VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (self.channel_id, conversation_id, ref),
            )
        return cursor.rowcount == 1

    async def load_state(self) -> dict[str, Any] | None:
        """The connection's position as its last owner kept it (see
        :mod:`thalos_bot.channels.connection_state`)."""
        async with self._db.read() as conn:
            row = await fetch_one(
                conn,
                "SELECT state FROM connection_leases WHERE channel_id = %s",
                (self.channel_id,),
            )
        state = None if row is None else row["state"]
        return state if isinstance(state, dict) else None

    async def save_state(self, state: Mapping[str, Any]) -> bool:
        """Keep the connection's position; False (nothing written) once this replica's
        token no longer holds the lease, or when the store cannot be written."""
        if self.token is None:
            return False
        try:
            async with self._db.transaction() as conn:
                cursor = await conn.execute(
                    "UPDATE connection_leases SET state = %s"
                    " WHERE channel_id = %s AND holder = %s AND token = %s",
                    (json.dumps(dict(state)), self.channel_id, self.replica, self.token),
                )
        except (psycopg.Error, OSError) as exc:
            # The store out of reach, or this session ended by the server after a stall
            # (STALLED_TRANSACTION_S): not kept; the next save keeps it, or the next owner
            # goes on from the last one kept (what it reads again, the inbox knows).
            log.warning(
                "connection_state_not_written", channel=self.channel_id, error=type(exc).__name__
            )
            return False
        if cursor.rowcount != 1:
            log.warning("connection_state_fenced", channel=self.channel_id, token=self.token)
            return False
        return True

    async def release(self) -> None:
        """Give the lease up (a clean stop): a standby takes it at its next try."""
        token, self.token = self.token, None
        if token is None:
            return
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE connection_leases SET holder = NULL, expires_at = now()"
                " WHERE channel_id = %s AND holder = %s AND token = %s",
                (self.channel_id, self.replica, token),
            )
        log.info("connection_lease_released", channel=self.channel_id, token=token)


async def owners(db: PgDatabase) -> list[Owner]:
    """Every channel's connection owner, as the store has it."""
    async with db.read() as conn:
        rows = await fetch_all(
            conn,
            "SELECT channel_id, holder, token, since, taken_over_at,"
            " expires_at <= now() AS expired FROM connection_leases ORDER BY channel_id",
            (),
        )
    return [
        Owner(
            str(r["channel_id"]),
            r["holder"],
            int(r["token"]),
            r["since"],
            r["taken_over_at"],
            bool(r["expired"]),
        )
        for r in rows
    ]
