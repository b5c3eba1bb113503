"""Approval presses relayed among replicas, kept in the shared store.

A press made on one replica for a question another asked (:mod:`thalos_bot.channels.
approvals.relay`) is written to ``approval_presses`` and announced (``NOTIFY``, in the
same statement, with the row's number: one round trip, in autocommit). A replica
whose LISTEN connection was being made again when it committed never hears that
notification; so each replica also reads the presses of the last
:attr:`StoredPresses.within` seconds (no question is open longer: the approval
timeout) when its LISTEN connection is back, and every so often anyway. Each row is
handed on once per replica, whichever way it arrived first. Rows older than the
timeout (and a margin) are deleted at the next write.

The press itself is opaque here (the kit encodes it): a string.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import structlog

from thalos_bot.storage.pg.database import PgDatabase, fetch_all

log = structlog.get_logger(__name__)

KEPT_MARGIN = 60.0
"""Seconds past the approval timeout a row (and a replica's note that it handed one
on) is kept: room for clocks that disagree between a replica and the server."""


class StoredPresses:
    """One channel's relayed presses in the store. ``notify``: the NOTIFY channel they
    are announced on (its payload: ``<row number>:<press>``)."""

    def __init__(
        self,
        db: PgDatabase,
        channel_id: str,
        notify: str,
        *,
        within: float,
        clock: Callable[[], float] = anyio.current_time,
    ) -> None:
        self._db = db
        self.channel_id = channel_id
        self._notify = notify
        self.within = within
        self._clock = clock
        self._handed: dict[int, float] = {}
        """Each row handed on here, with when (this process's clock)."""

    async def write(self, press: str) -> None:
        """Keep ``press`` and announce it, in one statement on its own (one round trip:
        the NOTIFY goes out as it commits). Raises what psycopg raises."""
        async with self._db.single() as conn:
            await conn.execute(
                "WITH old AS (DELETE FROM approval_presses WHERE channel_id = %s"
                " AND pressed_at < now() - make_interval(secs => %s)),"
                " new AS (INSERT INTO approval_presses (channel_id, press) VALUES (%s, %s)"
                " RETURNING id, press)"
                " SELECT pg_notify(%s, new.id || ':' || new.press) FROM new",
                (self.channel_id, self.within + KEPT_MARGIN, self.channel_id, press, self._notify),
            )

    def heard(self, payload: str) -> str | None:
        """The press of a notification, or None: handed on here already, or a payload of
        another shape (logged)."""
        number, _, press = payload.partition(":")
        if not number.isdigit():
            log.warning("approval_press_unreadable", channel=self.channel_id)
            return None
        return press if self._first(int(number)) else None

    async def again(self) -> list[str]:
        """The presses of the last :attr:`within` seconds not handed on here yet, in
        the order written. Raises what psycopg raises."""
        async with self._db.single() as conn:  # one statement: one snapshot
            rows = await fetch_all(
                conn,
                "SELECT id, press FROM approval_presses WHERE channel_id = %s"
                " AND pressed_at >= now() - make_interval(secs => %s) ORDER BY id",
                (self.channel_id, self.within),
            )
        return [str(r["press"]) for r in rows if self._first(int(r["id"]))]

    def _first(self, number: int) -> bool:
        now = self._clock()
        forget = now - self.within - KEPT_MARGIN  # read again by no :meth:`again`
        for old in [n for n, at in self._handed.items() if at < forget]:
            del self._handed[old]
        if number in self._handed:
            return False
        self._handed[number] = now
        return True
