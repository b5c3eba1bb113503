"""Every final goes store → outbox worker → channel → journal: the wrapper that makes it
so, put around each adapter when the daemon is assembled.

The pump streams previews and knows nothing of the outbox: it asks the runtime to keep
each turn's final (the row is written in the turn's own transaction) and delivers the
turn's events to its adapter as always. A :class:`TurnCompleted` that names its row
(:attr:`~thalos_bot.domain.events.TurnCompleted.delivery`) reaches this wrapper, which
hands the row to the outbox: the channel delivers it exactly once and confirms it in the
row's journal. A spoken answer's clip that names its turn is kept as a row of its own
the same way (:meth:`~thalos_bot.service.outbox.Outbox.keep_clip`). Everything else
passes through unchanged, and so does a final whose row
is gone (or whose hand-over failed: logged, and the final is delivered as it is).
"""

from __future__ import annotations

from typing import Protocol

import structlog

from thalos_bot.channels.ports import ChannelAdapter, Delivery
from thalos_bot.domain.events import TurnCompleted, VoiceClip
from thalos_bot.domain.ids import ChannelId, ConversationId

log = structlog.get_logger(__name__)


class HandsOver(Protocol):
    """The outbox's side (:meth:`thalos_bot.service.outbox.Outbox.hand_over`)."""

    async def hand_over(
        self, key: str, terminal: TurnCompleted, fallback: ChannelAdapter
    ) -> bool: ...

    async def keep_clip(
        self,
        channel_id: ChannelId,
        conversation_id: ConversationId,
        clip: VoiceClip,
        fallback: ChannelAdapter,
    ) -> bool: ...


class FinalsThroughOutbox:
    def __init__(self, inner: ChannelAdapter, outbox: HandsOver) -> None:
        self.inner = inner
        self.channel_id = inner.channel_id
        self.flush_interval: float | None = getattr(inner, "flush_interval", None)
        self._outbox = outbox

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        if isinstance(event, TurnCompleted) and event.delivery is not None:
            try:
                if await self._outbox.hand_over(event.delivery, event, self.inner):
                    return
            except Exception:
                log.exception(
                    "outbox_hand_over_failed", channel=self.channel_id, conversation=conversation_id
                )
        elif isinstance(event, VoiceClip) and event.turn is not None:
            try:
                channel = ChannelId(self.channel_id)
                if await self._outbox.keep_clip(channel, conversation_id, event, self.inner):
                    return
            except Exception:
                log.exception(
                    "outbox_clip_failed", channel=self.channel_id, conversation=conversation_id
                )
        await self.inner.deliver(conversation_id, event)
