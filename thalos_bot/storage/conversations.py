"""The :class:`ConversationMap` seam: (channel, conversation) → binding."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from thalos_bot.domain.ids import AgentId, ChannelId, ConversationId, SessionId


@dataclass(frozen=True, slots=True)
class Binding:
    channel_id: ChannelId
    conversation_id: ConversationId
    session_id: SessionId
    agent_id: AgentId
    last_activity: datetime


class ConversationMap(Protocol):
    async def get(
        self, channel_id: ChannelId, conversation_id: ConversationId
    ) -> Binding | None: ...

    async def bind(self, binding: Binding) -> None:
        """Insert or replace the binding for its (channel, conversation)."""
        ...

    async def touch(
        self, channel_id: ChannelId, conversation_id: ConversationId, at: datetime
    ) -> None:
        """Record activity; a no-op when the conversation is unbound."""
        ...

    async def unbind(self, channel_id: ChannelId, conversation_id: ConversationId) -> None:
        """Remove the binding; a no-op when the conversation is unbound."""
        ...
