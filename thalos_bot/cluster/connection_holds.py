"""A connection channel's 429 waits, shared: the ``retry_after`` one owner was told for
a chat is stored (``connection_holds``), so the next owner obeys it.

Discord's and Slack's limits count a bot's calls whichever process makes them. Only the
owner of the connection sends, but an owner killed (or stopped) in the middle of a wait
leaves its pending finals to the next one, which would otherwise send at once into the
block and earn a longer one. A chat is named by a conversation of it (the adapter turns
it back into its chat); the stored time is the server's ``now()`` plus ``retry_after``
(the later of two), and what a replica reads is the seconds still left by the server's
clock, so clocks that disagree between machines do not matter. Telegram's webhook mode
has its own (:mod:`thalos_bot.cluster.holds`).

When any replica may send (:mod:`thalos_bot.service.anywhere`), a wait is also
announced (``NOTIFY`` on :func:`channel_of`, in the same transaction, with the seconds
left by the server's clock), so every replica's sender obeys it at once.
"""

from __future__ import annotations

import psycopg
import structlog

from thalos_bot.storage.pg.database import PgDatabase, fetch_all

log = structlog.get_logger(__name__)

EVERYWHERE = "*"
"""How a wait that holds every chat of the channel (the platform limits the account, as
Matrix's ``M_LIMIT_EXCEEDED`` and Slack's method tiers do) is stored among the chats'."""


def channel_of(channel_id: str) -> str:
    """The NOTIFY channel of ``channel_id``'s waits; its payload is ``<seconds
    left> <conversation>``."""
    return f"thalos_connection_holds_{channel_id}"


def parse(payload: str) -> tuple[str, float] | None:
    """(conversation, seconds left) of a notification; None for one not understood."""
    seconds, _, conversation = payload.partition(" ")
    try:
        return conversation, float(seconds)
    except ValueError:
        return None


class ConnectionHolds:
    def __init__(self, db: PgDatabase, channel_id: str) -> None:
        self._db = db
        self.channel_id = channel_id

    async def share(self, conversation: str, seconds: float) -> None:
        """:meth:`hold`, logged; a store out of reach is logged, not raised (the wait is
        obeyed here all the same)."""
        try:
            left = await self.hold(conversation, seconds)
        except (psycopg.Error, OSError) as exc:
            log.warning("connection_hold_not_shared", error=str(exc))
            return
        log.info(
            "connection_hold_shared",
            channel=self.channel_id,
            conversation=conversation,
            seconds=round(left, 2),
        )

    async def hold(self, conversation: str, seconds: float) -> float:
        """Store a wait for the chat of ``conversation``; return the seconds it is held
        now (a longer stored wait is kept)."""
        async with self._db.transaction() as conn:
            rows = await fetch_all(
                conn,
                "INSERT INTO connection_holds AS h (channel_id, conversation, retry_until)"
                " VALUES (%s, %s, now() + make_interval(secs => %s))"
                " ON CONFLICT (channel_id, conversation) DO UPDATE"
                " SET retry_until = greatest(h.retry_until, EXCLUDED.retry_until)"
                " RETURNING extract(epoch FROM retry_until - now())::float8 AS left_s",
                (self.channel_id, conversation, seconds),
            )
            if rows:
                await conn.execute(
                    "SELECT pg_notify(%s, %s)",
                    (channel_of(self.channel_id), f"{float(rows[0]['left_s'])} {conversation}"),
                )
        return float(rows[0]["left_s"]) if rows else seconds

    async def running(self) -> dict[str, float]:
        """The chats held now (by a conversation of each), with the seconds left; the
        waits that ran out are deleted."""
        async with self._db.transaction() as conn:
            await conn.execute(
                "DELETE FROM connection_holds WHERE channel_id = %s AND retry_until <= now()",
                (self.channel_id,),
            )
            rows = await fetch_all(
                conn,
                "SELECT conversation, extract(epoch FROM retry_until - now())::float8 AS left_s"
                " FROM connection_holds WHERE channel_id = %s",
                (self.channel_id,),
            )
        return {str(r["conversation"]): float(r["left_s"]) for r in rows}
