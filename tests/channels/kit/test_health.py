"""A channel's health says when it last worked: the kit marks it at each message any
transport hands on, so one with nothing to poll (the terminal, the web page) says it too."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from thalos_bot.channels.health import ChannelHealth, NotingSource
from thalos_bot.channels.ports import InboundMessage, Notice, Sender, SourceNotice
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.domain.security import SecurityContext

AT = datetime(2026, 12, 5, 9, 30, tzinfo=UTC)


class Listed:
    channel_id = ChannelId("web")

    def __init__(self, *items: InboundMessage | SourceNotice) -> None:
        self.items = items

    async def messages(self) -> AsyncIterator[InboundMessage | SourceNotice]:
        for item in self.items:
            yield item


@pytest.mark.anyio
async def test_a_message_marks_the_channel_ok_and_a_notice_does_not() -> None:
    conversation = ConversationId("local")
    message = InboundMessage(
        ChannelId("web"),
        conversation,
        Sender(SecurityContext.of("local")),
        "hello",
        AT,
    )
    health = ChannelHealth(clock=lambda: AT)
    notice = NotingSource(Listed(SourceNotice(conversation, Notice("a file was refused"))), health)
    assert [item async for item in notice.messages()] != []
    assert health.last_ok_at is None, "a notice is not the channel working"
    noting = NotingSource(Listed(message), health)
    assert noting.channel_id == "web"
    assert [item async for item in noting.messages()] == [message]
    assert health.last_ok_at == AT
