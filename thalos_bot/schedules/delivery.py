"""The port a detached result leaves through: a scheduled run's answer, or the notice of
its failure.

The scheduler calls :class:`Deliver`; the host decides how the text reaches the
conversation (straight to the channel's adapter, or through the durable outbox), in
:mod:`thalos_bot.service.delivery` and :mod:`thalos_bot.service.outbox`. The port sits
here, beside its one caller, so the scheduler needs nothing from the service layer.
"""

from __future__ import annotations

from typing import Literal, Protocol

from thalos_bot.domain.ids import ChannelId, ConversationId

DeliveryKind = Literal["answer", "notice"]


class Deliver(Protocol):
    async def deliver(
        self,
        channel_id: ChannelId,
        conversation_id: ConversationId,
        text: str,
        *,
        kind: DeliveryKind,
    ) -> None: ...
