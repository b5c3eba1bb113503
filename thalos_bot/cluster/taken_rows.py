"""The shared inbox's rows one replica took and has not finished, by conversation.

A connection channel's rows (``connection_seen``) are taken under a fencing token: the
connection lease's (:mod:`thalos_bot.cluster.connection_inbox`, the owner runs them)
or the conversation lease's (:mod:`thalos_bot.cluster.seen_lanes`, any replica runs
them). Either way a row is *done* (its payload dropped) inside the commit of the turn
that answers it, only while the token it was taken under still holds
(:meth:`TakenRows.admit`), or once the pump dealt with it otherwise
(:meth:`TakenRows.done`). Both match the row on (seq, token): the same row taken again
under a newer token is another run of it, and a stale run's commit is refused.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog

from thalos_bot.storage.pg.database import Connection, PgDatabase

log = structlog.get_logger(__name__)

Holds = Callable[[Connection, str, int], Awaitable[bool]]
"""Whether ``token`` still holds (``FOR SHARE``) what a row of the conversation was
taken under."""

DONE = (
    "UPDATE connection_seen SET payload = NULL, done_at = now()"
    " WHERE channel_id = %s AND seq = %s AND taken_token = %s"
)


class TakenRows:
    def __init__(self, db: PgDatabase, channel_id: str, holds: Holds) -> None:
        self._db = db
        self.channel_id = channel_id
        self._holds = holds
        self.rows: dict[str, list[tuple[int, int]]] = {}
        """conversation → the rows taken here and not finished: (seq, the token they
        were taken under), oldest first."""

    def add(self, conversation_id: str, seq: int, token: int) -> None:
        self.rows.setdefault(conversation_id, []).append((seq, token))

    async def done(self, conversation_id: str, seq: int, token: int | None) -> None:
        """The pump dealt with row ``seq`` taken under ``token`` (a command, a notice, a
        turn that failed; or after its turn's commit already did this)."""
        taken = self.rows.get(conversation_id, [])
        if token is None or (seq, token) not in taken:
            return
        taken.remove((seq, token))
        if not taken:
            self.rows.pop(conversation_id, None)
        async with self._db.transaction() as conn:
            await conn.execute(DONE, (self.channel_id, seq, token))

    async def admit(self, conn: Connection, conversation_id: str) -> bool:
        """Inside the commit of a turn of ``conversation_id``. When a row of it was taken
        here and is not done, the turn answers the oldest (one conversation's turns run
        one at a time, in arrival order): kept only while the token it was taken under
        still holds (``FOR SHARE``: a takeover waits for this commit), and the row is
        done in the same transaction. A row whose token no longer holds is a stale run's
        (this replica stalled past its lease; the row was taken again under a newer
        token): refused, and forgotten here. A turn answering nothing taken here (a
        schedule's, say) is admitted."""
        taken = self.rows.get(conversation_id)
        if not taken:
            return True
        seq, token = taken.pop(0)
        if not taken:
            self.rows.pop(conversation_id, None)
        if not await self._holds(conn, conversation_id, token):
            log.warning("connection_turn_fenced", channel=self.channel_id, token=token, seq=seq)
            return False
        await conn.execute(DONE, (self.channel_id, seq, token))
        return True
