"""Binding a channel's way of asking to one conversation, for the turn's tool gate."""

from __future__ import annotations

from dataclasses import dataclass

from thalos_bot.channels.ports import ChannelAdapter
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest, Approver, AsksApproval


@dataclass(frozen=True, slots=True)
class ConversationApprover:
    """Asks the person in one conversation of one channel."""

    channel: AsksApproval
    channel_id: ChannelId
    conversation_id: ConversationId

    @property
    def conversation(self) -> str:
        return f"{self.channel_id}:{self.conversation_id}"

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        return await self.channel.ask_approval(self.conversation_id, request)


def approver_for(adapter: ChannelAdapter, conversation_id: ConversationId) -> Approver | None:
    """The conversation's approver when the channel can ask; None (nobody: deny) if not."""
    inner: object = adapter
    while not isinstance(inner, AsksApproval) and hasattr(inner, "inner"):
        inner = inner.inner  # a wrapper (tracing, finals) asks through what it wraps
    if not isinstance(inner, AsksApproval):
        return None
    return ConversationApprover(inner, adapter.channel_id, conversation_id)
