"""Deliveries to mail threads: the kit's engine over email's wire, with the one thing
only this channel needs: a mail whose turn's final reaches the outbox is written down as
done (:mod:`.ledger`) before its answer is sent, so a restart that reads the mail again
starts no second turn (the outbox's row sends the answer, once)."""

from __future__ import annotations

from anyio.abc import TaskGroup

from thalos_bot.channels.delivery.channel import WireAdapter, rendering_for
from thalos_bot.channels.final import DeliveryJournal
from thalos_bot.channels.ports import Delivery, TurnStarted
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot_email.ledger import Ledger
from thalos_bot_email.threads import Thread
from thalos_bot_email.wire import EmailWire


def _thread(conversation_id: ConversationId) -> tuple[Thread, str | None]:
    return Thread.parse(conversation_id), None


class EmailAdapter(WireAdapter[Thread, None]):
    def __init__(
        self, wire: EmailWire, group: TaskGroup, ledger: Ledger, *, channel_id: ChannelId
    ) -> None:
        super().__init__(
            wire,
            group,
            rendering_for(wire.limits, "off"),
            channel_id=channel_id,
            parse=_thread,
            private=lambda thread: True,
        )
        self._ledger = ledger
        self._answering: dict[ConversationId, str] = {}

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        if isinstance(event, TurnStarted) and event.answers is not None:
            self._answering[conversation_id] = event.answers
        await super().deliver(conversation_id, event)

    async def deliver_final(
        self,
        conversation_id: ConversationId,
        text: str,
        journal: DeliveryJournal,
        *,
        ends_turn: bool,
    ) -> None:
        answers = self._answering.pop(conversation_id, None)
        if answers is not None and not journal.progress:
            await self._ledger.done(None, answers)
        await super().deliver_final(conversation_id, text, journal, ends_turn=ends_turn)
