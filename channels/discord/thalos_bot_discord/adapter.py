"""Deliveries to Discord conversations: the kit's engine over Discord's wire.

Streamed answers, finals (an outbox row is confirmed once every part is shown), notices,
tool images and approval questions all go through the kit's engine
(:mod:`thalos_bot.channels.delivery.channel`), paced within the channel's bucket and
under the global limit; Discord's own part is its wire (:mod:`thalos_bot_discord.wire`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import discord
from anyio.abc import TaskGroup

from thalos_bot.channels.delivery.channel import WireAdapter
from thalos_bot.channels.delivery.rounds import Rendering
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest
from thalos_bot_discord.addressing import Place
from thalos_bot_discord.wire import DiscordWire

AskHandler = Callable[[Place, ApprovalRequest], Awaitable[ApprovalAnswer]]


def _place(conversation_id: ConversationId) -> tuple[Place, str | None]:
    return Place.parse(conversation_id), None


class DiscordAdapter(WireAdapter[Place, discord.ui.View]):
    def __init__(
        self,
        wire: DiscordWire,
        group: TaskGroup,
        *,
        channel_id: ChannelId,
        backoff_initial: float,
        backoff_max: float,
    ) -> None:
        rendering = Rendering(
            "edit",
            typing_interval=wire.limits.typing_interval,
            backoff_initial=backoff_initial,
            backoff_max=backoff_max,
            limit=wire.limits.message_units,
        )
        super().__init__(
            wire,
            group,
            rendering,
            channel_id=channel_id,
            parse=_place,
            private=lambda place: place.kind == "dm",
            pacer=wire.pacer,
        )
        self.discord = wire
        self.asker: AskHandler | None = None

    @property
    def flush_interval(self) -> float | None:
        """One edit per channel's share of its bucket (5 per 5 s: one a second)."""
        return self.wire.limits.chat_min_interval

    def knows_dm(self, user_id: int, channel_id: int) -> None:
        self.discord.knows_dm(user_id, channel_id)

    async def ask_approval(
        self, conversation_id: ConversationId, request: ApprovalRequest
    ) -> ApprovalAnswer:
        where = self.where(conversation_id)
        if self.asker is None or where is None:
            return ApprovalAnswer("denied", "no approver")
        return await self.asker(where[0], request)
