"""An in-memory :class:`~thalos_bot.storage.conversations.ConversationMap` for tests."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.storage.conversations import Binding
from thalos_bot.storage.database import as_utc


class MemoryConversationMap:
    """Bindings in a dict, with timestamps normalised to UTC like the SQLite map."""

    def __init__(self) -> None:
        self._bindings: dict[tuple[ChannelId, ConversationId], Binding] = {}

    async def get(self, channel_id: ChannelId, conversation_id: ConversationId) -> Binding | None:
        return self._bindings.get((channel_id, conversation_id))

    async def bind(self, binding: Binding) -> None:
        """Insert or replace the binding for its (channel, conversation)."""
        key = (binding.channel_id, binding.conversation_id)
        self._bindings[key] = dataclasses.replace(
            binding, last_activity=as_utc(binding.last_activity)
        )

    async def touch(
        self, channel_id: ChannelId, conversation_id: ConversationId, at: datetime
    ) -> None:
        """Record activity; a no-op when the conversation is unbound."""
        at = as_utc(at)
        key = (channel_id, conversation_id)
        binding = self._bindings.get(key)
        if binding is not None:
            self._bindings[key] = dataclasses.replace(binding, last_activity=at)

    async def unbind(self, channel_id: ChannelId, conversation_id: ConversationId) -> None:
        """Remove the binding; a no-op when the conversation is unbound."""
        self._bindings.pop((channel_id, conversation_id), None)
