"""Deliveries to Signal chats: the kit's engine over Signal's wire.

Answers go out whole (no streamed previews: see :mod:`thalos_bot_signal.wire`), split
at Signal's limit; notices, tool images and approval questions go the same way, paced
per chat and for the account, each chat's send in doubt settled by the probe.
"""

from __future__ import annotations

from anyio.abc import TaskGroup

from thalos_bot.channels.delivery.channel import WireAdapter, rendering_for
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot_signal.addressing import Place
from thalos_bot_signal.wire import Controls, SignalWire


def _place(conversation_id: ConversationId) -> tuple[Place, str | None]:
    return Place.parse(conversation_id), None


class SignalAdapter(WireAdapter[Place, Controls]):
    def __init__(
        self,
        wire: SignalWire,
        group: TaskGroup,
        *,
        channel_id: ChannelId,
        backoff: tuple[float, float],
    ) -> None:
        super().__init__(
            wire,
            group,
            rendering_for(wire.limits, "off", backoff),
            channel_id=channel_id,
            parse=_place,
            private=lambda place: place.kind == "dm",
        )
