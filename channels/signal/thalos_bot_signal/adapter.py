"""Deliveries to Signal chats: the kit's engine over Signal's wire.

Answers go out whole (no streamed previews: see :mod:`thalos_bot_signal.wire`), split
at Signal's limit; notices, tool images and approval questions go the same way, paced
per chat and for the account, each chat's send in doubt settled by the probe.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from anyio.abc import TaskGroup

from thalos_bot.channels.delivery.channel import WireAdapter, rendering_for
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest
from thalos_bot_signal.addressing import Place
from thalos_bot_signal.wire import Controls, SignalWire

Asker = Callable[[Place, ApprovalRequest], Awaitable[ApprovalAnswer]]


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
        self.asker: Asker | None = None

    async def ask_approval(
        self, conversation_id: ConversationId, request: ApprovalRequest
    ) -> ApprovalAnswer:
        where = self.where(conversation_id)
        if self.asker is None or where is None:
            return ApprovalAnswer("denied", "no approver" if where else "error")
        return await self.asker(where[0], request)
