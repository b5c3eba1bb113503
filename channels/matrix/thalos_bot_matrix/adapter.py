"""Deliveries to Matrix rooms: the kit's engine over Matrix's wire.

Streamed answers (one message, then ``m.replace`` edits as it grows), finals (an outbox
row is confirmed once every part is shown), notices, tool images and approval questions
all go through the kit's engine (:mod:`thalos_bot.channels.delivery.channel`), paced per
room and waiting out the account's 429s; Matrix's own part is its wire
(:mod:`thalos_bot_matrix.wire`). A conversation is a room: its id is the room id
(``!abc:example.org``).
"""

from __future__ import annotations

from anyio.abc import TaskGroup

from thalos_bot.channels.delivery.channel import WireAdapter, rendering_for
from thalos_bot.channels.delivery.view import StreamMode
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest
from thalos_bot_matrix.approvals import MatrixApprovals
from thalos_bot_matrix.wire import Choices, MatrixWire


def _room(conversation_id: ConversationId) -> tuple[str, str | None]:
    if not conversation_id.startswith("!"):
        raise ValueError(conversation_id)
    return conversation_id, None


class MatrixAdapter(WireAdapter[str, Choices]):
    """An answer's first message replies to the message it answers, in a direct room
    too (no room is "private" to the engine)."""

    def __init__(
        self,
        wire: MatrixWire,
        group: TaskGroup,
        *,
        channel_id: ChannelId,
        streaming: StreamMode,
        backoff: tuple[float, float],
    ) -> None:
        super().__init__(
            wire,
            group,
            rendering_for(wire.limits, streaming, backoff),
            channel_id=channel_id,
            parse=_room,
            private=lambda _room: False,
        )
        self.approvals: MatrixApprovals | None = None

    async def ask_approval(
        self, conversation_id: ConversationId, request: ApprovalRequest
    ) -> ApprovalAnswer:
        if self.approvals is None or self.where(conversation_id) is None:
            return ApprovalAnswer("denied", "no approver")
        return await self.approvals.ask(conversation_id, request)
