"""The SQLite :class:`~thalos_bot.storage.conversations.ConversationMap`."""

from __future__ import annotations

from datetime import datetime

from thalos_bot.domain.ids import AgentId, ChannelId, ConversationId, SessionId
from thalos_bot.storage.conversations import LATEST_SQL, Binding, reached
from thalos_bot.storage.database import Database, decode_time, encode_time, fetch_one


class SqliteConversationMap:
    """(channel, conversation) → binding, in the shared :class:`Database`."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, channel_id: ChannelId, conversation_id: ConversationId) -> Binding | None:
        async with self._db.read() as conn:
            row = await fetch_one(
                conn,
                "SELECT session_id, agent_id, last_activity FROM conversation_bindings"
                " WHERE channel_id = ? AND conversation_id = ?",
                (channel_id, conversation_id),
            )
        if row is None:
            return None
        return Binding(
            channel_id=channel_id,
            conversation_id=conversation_id,
            session_id=SessionId(row["session_id"]),
            agent_id=AgentId(row["agent_id"]),
            last_activity=decode_time(row["last_activity"]),
        )

    async def bind(self, binding: Binding) -> None:
        """Insert or replace the binding for its (channel, conversation)."""
        stamp = encode_time(binding.last_activity)
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT OR REPLACE INTO conversation_bindings"
                " (channel_id, conversation_id, session_id, agent_id, last_activity)"
                " VALUES (?, ?, ?, ?, ?)",
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
        stamp = encode_time(at)
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE conversation_bindings SET last_activity = ?"
                " WHERE channel_id = ? AND conversation_id = ?",
                (stamp, channel_id, conversation_id),
            )

    async def unbind(self, channel_id: ChannelId, conversation_id: ConversationId) -> None:
        """Remove the binding; a no-op when the conversation is unbound."""
        async with self._db.transaction() as conn:
            await conn.execute(
                "DELETE FROM conversation_bindings WHERE channel_id = ? AND conversation_id = ?",
                (channel_id, conversation_id),
            )

    async def latest_of(self, owner: str) -> tuple[ChannelId, ConversationId] | None:
        """The conversation ``owner`` last talked in (None: none is bound)."""
        async with self._db.read() as conn:
            row = await fetch_one(conn, LATEST_SQL.replace("%s", "?"), (owner,))
        return None if row is None else reached(row["channel_id"], row["conversation_id"], owner)
