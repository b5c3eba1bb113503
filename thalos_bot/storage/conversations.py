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


LATEST_SQL = (
    "SELECT b.channel_id, b.conversation_id FROM conversation_bindings b"
    " JOIN sessions s ON s.id = b.session_id WHERE s.owner = %s"
    " ORDER BY b.last_activity DESC LIMIT 1"
)
"""Where a principal last talked: the binding of their most recently active session
(both stores; PostgreSQL's placeholders)."""


class Reaching(Protocol):
    async def latest_of(self, owner: str) -> tuple[ChannelId, ConversationId] | None:
        """The conversation ``owner`` last talked in (None: none is bound)."""
        ...


def reached(channel_id: str, conversation_id: str, owner: str) -> tuple[ChannelId, ConversationId]:
    """A :data:`LATEST_SQL` row as a place to tell its owner something: the owner's
    personal slot in a group (``<conversation>~<owner>``) is that group."""
    conversation = conversation_id.removesuffix(f"~{owner}")
    return ChannelId(channel_id), ConversationId(conversation)
