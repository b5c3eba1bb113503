"""The API's conversations, routed before the adapter of the transport that serves it.

A transport that serves the API on its listener (the web channel, ``api = true``) hands
the daemon :class:`ApiFirst` over its own adapter (``ServedApi.first``). Whatever is
delivered to one of the API's conversations (a delivery, an outbox row's final, notice
or clip) goes to the request waiting for it, and a row is confirmed once handed over;
an approval question there is denied (nobody can be asked over the API). Everything
else goes to the transport's adapter.
"""

from __future__ import annotations

from thalos_bot.channels.final import DeliveryJournal
from thalos_bot.channels.listeners.served import ServedApi, Serving
from thalos_bot.channels.ports import Delivery, Notice
from thalos_bot.domain.events import VoiceClip
from thalos_bot.domain.ids import ConversationId
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest


class ApiFirst:
    def __init__(self, api: ServedApi, inner: Serving) -> None:
        self.api = api
        self.inner = inner
        self.channel_id = inner.channel_id
        self.flush_interval = inner.flush_interval

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        if self.api.owns(conversation_id):
            self.api.deliver(conversation_id, event)  # a request of the API waits for it
        else:
            await self.inner.deliver(conversation_id, event)

    def passes_final(self, conversation_id: ConversationId) -> bool:
        """A request of the API waits for this conversation's final as its event (with
        the turn's usage): it is delivered as it is, not through ``deliver_final``."""
        return self.api.owns(conversation_id)

    async def deliver_final(
        self,
        conversation_id: ConversationId,
        text: str,
        journal: DeliveryJournal,
        *,
        ends_turn: bool,
    ) -> None:
        # For the API, a request taken over after a restart.
        if not await self._handed(conversation_id, Notice(text, "info"), journal):
            await self.inner.deliver_final(conversation_id, text, journal, ends_turn=ends_turn)

    async def deliver_notice(
        self, conversation_id: ConversationId, notice: Notice, journal: DeliveryJournal
    ) -> None:
        if not await self._handed(conversation_id, notice, journal):
            await self.inner.deliver_notice(conversation_id, notice, journal)

    async def deliver_clip(
        self, conversation_id: ConversationId, clip: VoiceClip, journal: DeliveryJournal
    ) -> None:
        if not await self._handed(conversation_id, clip, journal):
            await self.inner.deliver_clip(conversation_id, clip, journal)

    async def ask_approval(
        self, conversation_id: ConversationId, request: ApprovalRequest
    ) -> ApprovalAnswer:
        if self.api.owns(conversation_id):
            return ApprovalAnswer("denied", "nobody to ask over the API")
        return await self.inner.ask_approval(conversation_id, request)

    async def _handed(
        self, conversation_id: ConversationId, event: Delivery, journal: DeliveryJournal
    ) -> bool:
        """An outbox row of one of the API's conversations, handed to its request and
        confirmed; False (nothing done) for any other conversation's."""
        if not self.api.owns(conversation_id):
            return False
        self.api.deliver(conversation_id, event)
        await journal.confirm()
        return True
