"""The Matrix adapter: the pump's deliveries, rendered per room.

``deliver`` records the delivery in the room's outbox and returns; each room has a
sender task (started on its first delivery, in the channel's task group) that talks to
the homeserver, so a slow or rate-limited room never holds up the pump. A conversation
is a room: its id is the room id (``!abc:example.org``).

A final answer through the outbox (:meth:`MatrixAdapter.deliver_final`) notes in its
row, before each call, the transaction id it is about to use and the events it already
made: made again after a timeout, a restart or a kill, the call is the same
``PUT …/send/m.room.message/{txnId}``, which the homeserver answers with the event it
already stored, so the room never shows a second copy.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import structlog
from anyio.abc import TaskGroup

from thalos_bot.channels.final import DeliveryJournal
from thalos_bot.channels.pacing.backoff import Backoff
from thalos_bot.channels.ports import Delivery
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest
from thalos_bot_matrix.approvals import MatrixApprovals
from thalos_bot_matrix.client import MatrixClient
from thalos_bot_matrix.pacing import AccountGate, RoomGate
from thalos_bot_matrix.room import RoomOutbox, RoomSender, Seal
from thalos_bot_matrix.views import OutcomeView, QuestionView

log = structlog.get_logger(__name__)

OWN_EVENTS_KEPT = 2048
"""How many of its own event ids the adapter remembers (a reply to one addresses it)."""


class MatrixAdapter:
    def __init__(
        self,
        client: MatrixClient,
        group: TaskGroup,
        *,
        room_min_interval: float,
        backoff: tuple[float, float],
        channel_id: str = "matrix",
        live: bool = True,
    ) -> None:
        self.channel_id = ChannelId(channel_id)
        self.client = client
        self.account = AccountGate()
        self._group = group
        self._min_interval = room_min_interval
        self._backoff = backoff
        self._live = live
        self._outboxes: dict[str, RoomOutbox] = {}
        self._own: deque[str] = deque(maxlen=OWN_EVENTS_KEPT)
        self.approvals: MatrixApprovals | None = None
        self.on_sent: Callable[[str], None] = lambda _event: None
        self.seal: Seal | None = None
        """Set when encryption is on: rooms' sends go through it (see :mod:`.crypto`)."""
        self.sealed: Callable[[str], bool] = lambda _room: False
        """Whether a room is encrypted (its files are then encrypted too)."""

    def is_own(self, event_id: str) -> bool:
        return event_id in self._own

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        self.post(conversation_id, event)

    def post(self, conversation_id: str, event: Delivery) -> None:
        if not conversation_id.startswith("!"):
            log.error("matrix_bad_conversation_id", conversation=conversation_id)
            return
        self.outbox(conversation_id).apply(event)

    def put(self, room_id: str, view: QuestionView | OutcomeView) -> None:
        self.outbox(room_id).put(view)

    async def deliver_final(
        self,
        conversation_id: ConversationId,
        text: str,
        journal: DeliveryJournal,
        *,
        ends_turn: bool,
    ) -> None:
        if not conversation_id.startswith("!"):
            log.error("matrix_bad_conversation_id", conversation=conversation_id)
            await journal.refuse()
            return
        view = self.outbox(conversation_id).final(text, journal, ends_turn=ends_turn)
        if ends_turn:
            # The streamed preview's events, and a call in flight, into the row now: a
            # kill before the final's first call must not send the answer anew.
            await journal.save(view.progress())
        elif journal.progress:
            view.resume(journal.progress)
            log.info(
                "matrix_delivery_resumed",
                room=conversation_id,
                parts=len(view.parts),
                retrying=view.pending is not None,
            )

    async def ask_approval(
        self, conversation_id: ConversationId, request: ApprovalRequest
    ) -> ApprovalAnswer:
        if self.approvals is None:
            return ApprovalAnswer("denied", "no approver")
        return await self.approvals.ask(conversation_id, request)

    def outbox(self, room_id: str) -> RoomOutbox:
        outbox = self._outboxes.get(room_id)
        if outbox is None:
            outbox = RoomOutbox(
                room_id, RoomGate(self.account, self._min_interval), live=self._live
            )
            self._outboxes[room_id] = outbox
            sender = RoomSender(
                self.client,
                outbox,
                Backoff(*self._backoff),
                on_sent=self._sent,
                seal=self.seal,
                sealed=self.sealed,
            )
            self._group.start_soon(sender.run, name=f"matrix-room-{room_id}")
        return outbox

    def _sent(self, event_id: str) -> None:
        self._own.append(event_id)
        self.on_sent(event_id)

    async def drain(self) -> None:
        for outbox in list(self._outboxes.values()):
            await outbox.wait_empty()

    def pending_rooms(self) -> list[str]:
        return [room for room, outbox in self._outboxes.items() if outbox.pending]
