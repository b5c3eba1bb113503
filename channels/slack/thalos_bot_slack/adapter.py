"""The Slack adapter: the pump's deliveries, each put in its conversation's lane.

``deliver`` never waits for Slack: each conversation has a lane (see
:mod:`thalos_bot_slack.lane`) whose task, started on its first delivery in the
channel's task group, shows things in order. The final answer comes either as the
turn's :class:`TurnCompleted` or, with the outbox, through :meth:`deliver_final` with
its journal, which the lane confirms once every part is shown.
"""

from __future__ import annotations

import structlog
from anyio.abc import TaskGroup

from thalos_bot.channels.final import DeliveryJournal
from thalos_bot.channels.ports import Delivery
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest
from thalos_bot_slack.addressing import Place
from thalos_bot_slack.approvals import SlackApprovals
from thalos_bot_slack.lane import Final, Item, Lane, Outcome, Question, Shared

log = structlog.get_logger(__name__)


class SlackAdapter:
    def __init__(self, shared: Shared, group: TaskGroup, channel_id: str = "slack") -> None:
        self.channel_id = ChannelId(channel_id)
        self.shared = shared
        self._group = group
        self._lanes: dict[str, Lane] = {}
        self.approvals: SlackApprovals | None = None

    def lane(self, conversation_id: str) -> Lane | None:
        lane = self._lanes.get(conversation_id)
        if lane is None:
            try:
                place = Place.parse(conversation_id)
            except ValueError:
                log.error("slack_bad_conversation_id", conversation=conversation_id)  # noqa: TRY400
                return None
            lane = Lane(place, self.shared)
            self._lanes[conversation_id] = lane
            self._group.start_soon(lane.run, name=f"slack-{conversation_id}")
        return lane

    def put(self, conversation_id: str, item: Item) -> None:
        lane = self.lane(conversation_id)
        if lane is not None:
            lane.put(item)

    def put_question(self, conversation_id: str, item: Question | Outcome) -> None:
        self.put(conversation_id, item)

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        self.put(conversation_id, event)

    async def deliver_final(
        self,
        conversation_id: ConversationId,
        text: str,
        journal: DeliveryJournal,
        *,
        ends_turn: bool,
    ) -> None:
        lane = self.lane(conversation_id)
        if lane is None:
            await journal.refuse()
            return
        lane.put(Final(text, journal, ends_turn))

    async def ask_approval(
        self, conversation_id: ConversationId, request: ApprovalRequest
    ) -> ApprovalAnswer:
        if self.approvals is None:
            return ApprovalAnswer("denied", "no approver")
        try:
            place = Place.parse(conversation_id)
        except ValueError:
            return ApprovalAnswer("denied", "error")
        return await self.approvals.ask(conversation_id, place.channel, request)

    async def drain(self) -> None:
        for lane in list(self._lanes.values()):
            await lane.wait_idle()

    def pending_conversations(self) -> list[str]:
        return [c for c, lane in self._lanes.items() if lane.pending]

    def close(self) -> None:
        for lane in self._lanes.values():
            lane.close()
