"""The PostgreSQL :class:`~thalos_bot.storage.conversations.ConversationMap`."""

from __future__ import annotations

from datetime import datetime

from thalos_bot.domain.ids import AgentId, ChannelId, ConversationId, SessionId
from thalos_bot.storage.conversations import LATEST_SQL, Binding, reached
from thalos_bot.storage.database import as_utc
from thalos_bot.storage.pg.database import PgDatabase, fetch_one


class PgConversationMap:
    """(channel, conversation) → binding, in a :class:`PgDatabase`."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    async def get(self, channel_id: ChannelId, conversation_id: ConversationId) -> Binding | None:
        async with self._db.read() as conn:
            row = await fetch_one(
                conn,
                "SELECT session_id, agent_id, last_activity FROM conversation_bindings"
                " WHERE channel_id = %s AND conversation_id = %s",
                (channel_id, conversation_id),
            )
        if row is None:
            return None
        return Binding(
            channel_id=channel_id,
            conversation_id=conversation_id,
            session_id=SessionId(row["session_id"]),
            agent_id=AgentId(row["agent_id"]),
            last_activity=as_utc(row["last_activity"]),
        )

    async def bind(self, binding: Binding) -> None:
        """Insert or replace the binding for its (channel, conversation)."""
        stamp = as_utc(binding.last_activity)
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO conversation_bindings"
                " (channel_id, conversation_id, session_id, agent_id, last_activity)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (channel_id, conversation_id)"
                " DO UPDATE SET session_id = excluded.session_id,"
                " agent_id = excluded.agent_id, last_activity = excluded.last_activity",
                (
                    binding.channel_id,
                    binding.conversation_id,
                    binding.session_id,
                    binding.agent_id,
                    stamp,
                ),
            )

    async def touch(
        self, channel_id: ChannelId, conversation_id: ConversationId, at: datetime
    ) -> None:
        """Record activity; a no-op when the conversation is unbound."""
        stamp = as_utc(at)
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE conversation_bindings SET last_activity = %s"
                " WHERE channel_id = %s AND conversation_id = %s",
                (stamp, channel_id, conversation_id),
            )

    async def unbind(self, channel_id: ChannelId, conversation_id: ConversationId) -> None:
        """Remove the binding; a no-op when the conversation is unbound."""
        async with self._db.transaction() as conn:
            await conn.execute(
                "DELETE FROM conversation_bindings WHERE channel_id = %s AND conversation_id = %s",
                (channel_id, conversation_id),
            )

    async def latest_of(self, owner: str) -> tuple[ChannelId, ConversationId] | None:
        """The conversation ``owner`` last talked in (None: none is bound)."""
        async with self._db.read() as conn:
            row = await fetch_one(conn, LATEST_SQL, (owner,))
        return None if row is None else reached(row["channel_id"], row["conversation_id"], owner)
