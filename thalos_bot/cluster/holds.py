"""Telegram's 429 waits, shared: the ``retry_after`` one replica was told is stored on
the chat's row (``chat_holds``), so every replica obeys it.

Telegram counts a bot's calls per chat whichever process makes them: a replica that
sent into a chat another one was just told to leave alone earns a longer wait, and
another 429. So the replica that gets the 429 writes ``retry_until`` (the later of
the stored one and the server's ``now()`` plus ``retry_after``) and, in the same
transaction, a ``NOTIFY`` carrying the seconds still left by the server's clock: each
listener turns them into its own monotonic deadline, so clocks that disagree between
machines do not matter. A replica that starts, or reconnects its listener, reads the
holds still running (:meth:`ChatHolds.running`): it may take a chat over mid-wait.
"""

from __future__ import annotations

from thalos_bot.storage.pg.database import PgDatabase, fetch_all

CHANNEL = "thalos_holds"
"""The NOTIFY channel; its payload is ``<bot>:<chat>:<seconds left>``."""


def parse(payload: str, bot: int) -> tuple[int, float] | None:
    """(chat, seconds left) of a notification about ``bot``; None for another bot's, or
    a payload this version does not read."""
    parts = payload.split(":")
    if len(parts) != 3 or parts[0] != str(bot):  # bot, chat, seconds
        return None
    try:
        return int(parts[1]), float(parts[2])
    except ValueError:
        return None


class ChatHolds:
    def __init__(self, db: PgDatabase, bot: int) -> None:
        self._db = db
        self.bot = bot

    async def hold(self, chat: int, seconds: float) -> float:
        """Store a 429's ``retry_after`` for ``chat`` and tell the replicas; return the
        seconds the chat is now held (a longer stored wait is kept). Raises what
        psycopg raises when the database cannot be reached."""
        async with self._db.transaction() as conn:
            rows = await fetch_all(
                conn,
                "WITH held AS (INSERT INTO chat_holds AS h (bot, chat, retry_until)"
                " VALUES (%s, %s, now() + make_interval(secs => %s))"
                " ON CONFLICT (bot, chat) DO UPDATE"
                " SET retry_until = greatest(h.retry_until, EXCLUDED.retry_until)"
                " RETURNING extract(epoch FROM retry_until - now())::float8 AS left_s)"
                " SELECT left_s, pg_notify(%s, concat_ws(':', %s::text, %s::text, left_s::text))"
                " FROM held",
                (self.bot, chat, seconds, CHANNEL, str(self.bot), str(chat)),
            )
        return float(rows[0]["left_s"]) if rows else seconds

    async def running(self) -> dict[int, float]:
        """The chats held now, with the seconds left of each."""
        async with self._db.transaction() as conn:
            rows = await fetch_all(
                conn,
                "SELECT chat, extract(epoch FROM retry_until - now())::float8 AS left_s"
                " FROM chat_holds WHERE bot = %s AND retry_until > now()",
                (self.bot,),
            )
        return {int(r["chat"]): float(r["left_s"]) for r in rows}

    async def prune(self) -> int:
        """Delete the holds that have run out; return how many went."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "DELETE FROM chat_holds WHERE bot = %s AND retry_until <= now()", (self.bot,)
            )
            return cursor.rowcount
