"""The delivery engine as a channel adapter: every chat's outbox and sender, over a wire.

``deliver`` only records the delivery in the chat's outbox and returns; each chat has
a :class:`~thalos_bot.channels.delivery.engine.WireSender` task (started on its first
delivery, in the channel's task group) that talks to the platform, so a slow or
flood-limited chat never holds up the pump or the other chats. An outbox row's final
(:meth:`WireAdapter.deliver_final`) is queued like any delivery and journaled as it
goes; one an earlier process began is resumed where it was.

A conversation id names a chat, and maybe a thread in it; the plug-in's ``parse`` says
which (the threads of one chat share its outbox, its pacing and its check of a send in
doubt).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import anyio
import structlog
from anyio.abc import TaskGroup

from thalos_bot.channels.delivery.engine import WireSender
from thalos_bot.channels.delivery.journal import resume
from thalos_bot.channels.delivery.outbox import ChatOutbox
from thalos_bot.channels.delivery.question import OutcomeView, QuestionView
from thalos_bot.channels.delivery.rounds import Rendering
from thalos_bot.channels.delivery.wire import Wire
from thalos_bot.channels.final import DeliveryJournal
from thalos_bot.channels.pacing.gate import ChatGate, GlobalPacer
from thalos_bot.channels.ports import Delivery
from thalos_bot.domain.ids import ChannelId, ConversationId

log = structlog.get_logger(__name__)

A = TypeVar("A")
M = TypeVar("M")

Parse = Callable[[ConversationId], tuple[A, str | None]]
"""A conversation id as the chat it is in and the thread (None: none); raises
ValueError for an id that is no such conversation."""


class WireAdapter(Generic[A, M]):
    """``private`` says whether a chat is a one-to-one chat (elsewhere an answer quotes
    the message it answers)."""

    def __init__(
        self,
        wire: Wire[A, M],
        group: TaskGroup,
        rendering: Rendering,
        *,
        channel_id: ChannelId,
        parse: Parse[A],
        private: Callable[[A], bool],
        pacer: GlobalPacer | None = None,
    ) -> None:
        self.channel_id = channel_id
        self.wire = wire
        self.rendering = rendering
        self._group = group
        self._parse = parse
        self._private = private
        limits = wire.limits
        self.pacer = pacer or GlobalPacer(limits.global_rate, limits.global_burst)
        """Every call across the channel's chats (the wire may share it for its own)."""
        self._outboxes: dict[A, ChatOutbox[A, M]] = {}
        self._events = {
            "resumed": f"{wire.name}_delivery_resumed",
            "bad_id": f"{wire.name}_bad_conversation_id",
        }

    # -- the ports -----------------------------------------------------------------------

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        where = self._where(conversation_id)
        if where is not None:
            chat, thread = where
            self.outbox(chat).apply(event, thread)

    async def deliver_final(
        self,
        conversation_id: ConversationId,
        text: str,
        journal: DeliveryJournal,
        *,
        ends_turn: bool,
    ) -> None:
        where = self._where(conversation_id)
        if where is None:
            await journal.refuse()
            return
        chat, thread = where
        view = self.outbox(chat).final(text, journal, ends_turn=ends_turn, thread=thread)
        progress = journal.progress
        if progress:
            resume(view, progress, self.rendering.mode, self.rendering.limit)
            log.info(
                self._events["resumed"],
                conversation=conversation_id,
                parts_shown=view.parts_done,
            )
        if view.done:
            view.journal = None
            await journal.confirm()

    # -- questions, and what the plug-in asks of the chats ---------------------------------

    def where(self, conversation_id: ConversationId) -> tuple[A, str | None] | None:
        """The chat and thread of a conversation (None: no conversation of this
        channel, logged)."""
        return self._where(conversation_id)

    def put(self, chat: A, view: QuestionView[M] | OutcomeView[M]) -> None:
        """An approval question for the chat, or the edit that closes one."""
        self.outbox(chat).put(view)

    def hold(self, chat: A, seconds: float) -> None:
        """Nothing goes to the chat for ``seconds`` (a wait another replica was told)."""
        self.outbox(chat).gate.block_for(seconds)

    async def drain(self) -> None:
        """Wait until every chat has shown everything it was given."""
        for outbox in list(self._outboxes.values()):
            await outbox.wait_empty()

    async def drain_within(self, seconds: float) -> bool:
        """:meth:`drain` for at most ``seconds``; False when it gave up."""
        with anyio.move_on_after(seconds):
            await self.drain()
            return True
        return False

    @property
    def pending_chats(self) -> int:
        return sum(1 for outbox in self._outboxes.values() if outbox.views)

    # -- inside ----------------------------------------------------------------------------

    def outbox(self, chat: A) -> ChatOutbox[A, M]:
        outbox = self._outboxes.get(chat)
        if outbox is None:
            limits = self.wire.limits
            gate = ChatGate(limits.chat_min_interval, burst=limits.chat_burst)
            outbox = ChatOutbox(
                chat, gate, private=self._private(chat), caption_limit=limits.caption_units
            )
            self._outboxes[chat] = outbox
            sender = WireSender(self.wire, outbox, self.rendering, self.pacer)
            self._group.start_soon(sender.run, name=f"{self.wire.name}-chat-{chat}")
        return outbox

    def _where(self, conversation_id: ConversationId) -> tuple[A, str | None] | None:
        try:
            return self._parse(conversation_id)
        except ValueError:
            log.error(  # noqa: TRY400 - no traceback needed: the id says it all
                self._events["bad_id"], conversation=conversation_id
            )
            return None
