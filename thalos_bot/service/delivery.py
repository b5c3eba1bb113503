"""Delivery of a detached result: a scheduled run's answer, or the notice of its failure.

:class:`~thalos_bot.schedules.delivery.Deliver` is the seam: the scheduler calls it,
the host decides how the text reaches the conversation. :class:`AdapterDelivery` hands
it straight to the channel's adapter; a durable outbox implements the same shape.
"""

from __future__ import annotations

from collections.abc import Mapping

import structlog

from thalos_bot.channels.ports import ChannelAdapter, Notice, TurnStarted
from thalos_bot.domain.events import TokenUsage, TurnCompleted
from thalos_bot.domain.ids import ChannelId, ConversationId, SessionId
from thalos_bot.schedules.delivery import DeliveryKind

log = structlog.get_logger(__name__)

DETACHED = SessionId("detached")
"""The session id on a detached answer's final event (its session is closed already)."""


class AdapterDelivery:
    """Straight to the channel adapter: an answer as a finished turn (rendered like any
    answer), a notice as a notice. An unknown channel is logged and dropped."""

    def __init__(self, adapters: Mapping[ChannelId, ChannelAdapter]) -> None:
        self._adapters = adapters

    async def deliver(
        self,
        channel_id: ChannelId,
        conversation_id: ConversationId,
        text: str,
        *,
        kind: DeliveryKind,
    ) -> None:
        adapter = self._adapters.get(channel_id)
        if adapter is None:
            log.warning("delivery_no_channel", channel=channel_id, conversation=conversation_id)
            return
        if kind == "notice":
            await adapter.deliver(conversation_id, Notice(text, "warning"))
            return
        await adapter.deliver(conversation_id, TurnStarted())
        await adapter.deliver(conversation_id, TurnCompleted(DETACHED, text, TokenUsage(), (), 0.0))
