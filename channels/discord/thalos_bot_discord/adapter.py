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

from thalos_bot.channels.delivery.channel import WireAdapter, rendering_for
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
        super().__init__(
            wire,
            group,
            rendering_for(wire.limits, "edit", (backoff_initial, backoff_max)),
            channel_id=channel_id,
            parse=_place,
            private=lambda place: place.kind == "dm",
            pacer=wire.pacer,
            flush_interval=wire.limits.chat_min_interval,  # one edit per bucket share
        )
        self.discord = wire
        self.asker: AskHandler | None = None

    def knows_dm(self, user_id: int, channel_id: int) -> None:
        self.discord.knows_dm(user_id, channel_id)

    def told_by_channel(self, channel_id: int, seconds: float) -> None:
        """A 429 discord.py met on a Discord channel (and waits out itself): told, for
        the other replicas, as the chat this adapter writes there."""
        for place in self.known_chats():
            if self.discord.channel_of(place) == channel_id:
                self.told(place, seconds)
                return
