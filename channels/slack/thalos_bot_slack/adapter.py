"""Deliveries to Slack conversations: the kit's engine over Slack's wire.

Streamed answers, finals (an outbox row is confirmed once every part is shown), notices,
tool images and approval questions all go through the kit's engine
(:mod:`thalos_bot.channels.delivery.channel`); Slack's own part is its wire
(:mod:`thalos_bot_slack.wire`). Each conversation (a DM, or a thread) is a chat of its
own: its outbox, its pacing and its check of a post in doubt.
"""

from __future__ import annotations

from anyio.abc import TaskGroup

from thalos_bot.channels.delivery.channel import WireAdapter, rendering_for
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot_slack.addressing import Place
from thalos_bot_slack.config import StreamMode
from thalos_bot_slack.wire import Blocks, SlackWire


def _place(conversation_id: ConversationId) -> tuple[Place, str | None]:
    return Place.parse(conversation_id), None


class SlackAdapter(WireAdapter[Place, Blocks]):
    def __init__(
        self, wire: SlackWire, group: TaskGroup, streaming: StreamMode, channel_id: str = "slack"
    ) -> None:
        limits = wire.limits
        rendering = rendering_for(limits, "off" if streaming == "off" else "edit")
        super().__init__(
            wire,
            group,
            rendering,
            channel_id=ChannelId(channel_id),
            parse=_place,
            private=lambda place: place.is_dm,
        )
