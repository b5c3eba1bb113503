"""The delivery engine as a channel adapter: every chat's outbox and sender, over a wire.

``deliver`` only records the delivery in the chat's outbox and returns; each chat has
a :class:`~thalos_bot.channels.delivery.engine.WireSender` task (started on its first
delivery, in the channel's task group) that talks to the platform, so a slow or
flood-limited chat never holds up the pump or the other chats. An outbox row's final
(:meth:`WireAdapter.deliver_final`) is queued like any delivery and journaled as it
goes; one an earlier process began is resumed where it was. A kept clip
(:meth:`WireAdapter.deliver_clip`) is queued like a tool's image, its upload journaled.

A conversation id names a chat, and maybe a thread in it; the plug-in's ``parse`` says
which (the threads of one chat share its outbox, its pacing and its check of a send in
doubt).

Replicas: a ``gate`` sees every delivery first (False drops it: another replica holds
the conversation), each flood wait a chat is told goes to ``told`` (for the other
replicas), and :meth:`WireAdapter.hold` obeys one another replica was told.

At shutdown, :meth:`WireAdapter.drain_within` waits for every chat to show what it was
given, longer while a chat waits out a flood-control block (until it ends) or awaits an
answer from the platform, never past its cap.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from time import monotonic
from typing import Generic, TypeVar

import anyio
import structlog
from anyio.abc import TaskGroup

from thalos_bot.channels.delivery.engine import WireSender
from thalos_bot.channels.delivery.journal import resume
from thalos_bot.channels.delivery.outbox import ChatOutbox
from thalos_bot.channels.delivery.photo import PhotoView, resume_upload
from thalos_bot.channels.delivery.question import OutcomeView, QuestionView
from thalos_bot.channels.delivery.rounds import Rendering
from thalos_bot.channels.delivery.view import StreamMode, View
from thalos_bot.channels.delivery.wire import Wire, WireLimits, finding
from thalos_bot.channels.final import DeliveryJournal
from thalos_bot.channels.pacing.gate import ChatGate, GlobalPacer
from thalos_bot.channels.ports import Delivery, TurnStarted
from thalos_bot.domain.events import VoiceClip
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest

log = structlog.get_logger(__name__)

A = TypeVar("A")
M = TypeVar("M")

Parse = Callable[[ConversationId], tuple[A, str | None]]
"""A conversation id as the chat it is in and the thread (None: none); raises
ValueError for an id that is no such conversation."""

AFTER_BLOCK = 2.0
"""Seconds a shutdown drain allows past a flood-control block, for the calls it held."""
AWAIT_GRACE = 1.0
"""How often a shutdown drain looks again while a call awaits the platform's answer: it
waits for the call as long as the call lasts (the client's request timeout ends a call
that hangs), within the drain's cap, so a 429 read late on a loaded machine still
extends the drain."""


def rendering_for(
    limits: WireLimits, mode: StreamMode, backoff: tuple[float, float] = (0.5, 10.0)
) -> Rendering:
    """The senders' settings for a wire: how answers stream, the typing interval, the
    backoff after a failure (initial, max) and the message limit."""
    return Rendering(
        mode,
        typing_interval=limits.typing_interval,
        backoff_initial=backoff[0],
        backoff_max=backoff[1],
        limit=limits.message_units,
    )


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
        flush_interval: float | None = None,
    ) -> None:
        self.channel_id = channel_id
        self.flush_interval = flush_interval
        """The pump's cadence for this channel (None: the pump's own)."""
        self.wire = wire
        self.rendering = rendering
        self._group = group
        self._parse = parse
        self._private = private
        finding(wire)  # a "find" wire without its look-up fails here, at start
        limits = wire.limits
        self.pacer = pacer or GlobalPacer(limits.global_rate, limits.global_burst)
        """Every call across the channel's chats (the wire may share it for its own)."""
        self.gate: Callable[[ConversationId, Delivery], bool] | None = None
        """Replicas: shown every delivery first; False drops it."""
        self.told: Callable[[A | None, float], None] = lambda chat, seconds: None
        """Replicas: each flood wait a chat is told (chat, seconds), for the others; the
        chat is None for a wait that holds every chat (the platform limits the account)."""
        self.asker: Callable[..., Awaitable[ApprovalAnswer]] | None = None
        """The channel's approvals, once they run: puts a request to a chat
        (``asker(chat, request)``, and ``thread=`` when the conversation is a thread)."""
        self.answering: Callable[[str], Awaitable[None]] | None = None
        """Called with the ref of the message a turn answers before that turn's final
        (one no earlier process began) goes to the outbox: a transport that reads its
        messages again after a restart writes it down there as answered."""
        self._answered: dict[ConversationId, str] = {}
        self._outboxes: dict[A, ChatOutbox[A, M]] = {}
        self._holds: dict[A, float] = {}
        self._names: dict[A, ConversationId] = {}
        """Waits heard of for chats with no outbox yet: chat -> monotonic deadline."""
        self._events = {
            "resumed": f"{wire.name}_delivery_resumed",
            "bad_id": f"{wire.name}_bad_conversation_id",
        }

    # -- the ports -----------------------------------------------------------------------

    async def ask_approval(
        self, conversation_id: ConversationId, request: ApprovalRequest
    ) -> ApprovalAnswer:
        """Put ``request`` to the conversation's chat; denied when nobody can be asked
        (no approvals yet, or an id that is no chat of this channel's)."""
        where = self.where(conversation_id)
        if self.asker is None or where is None:
            return ApprovalAnswer("denied", "no approver" if where else "error")
        chat, thread = where
        if thread is None:  # a transport without threads takes the chat alone
            return await self.asker(chat, request)
        return await self.asker(chat, request, thread=thread)

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        if isinstance(event, TurnStarted) and event.answers is not None and self.answering:
            self._answered[conversation_id] = event.answers
        self.post(conversation_id, event)

    def post(self, conversation_id: ConversationId, event: Delivery) -> None:
        """Record ``event`` for the conversation's chat (never waits)."""
        if self.gate is not None and not self.gate(conversation_id, event):
            return  # replicas: another one holds this conversation
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
        answered = self._answered.pop(conversation_id, None)
        if self.answering is not None and answered is not None and not journal.progress:
            await self.answering(answered)
        where = self._where(conversation_id)
        if where is None:
            await journal.refuse()
            return
        chat, thread = where
        view = self.outbox(chat).final(text, journal, ends_turn=ends_turn, thread=thread)
        progress = journal.progress
        if progress:
            resume(view, progress, self.rendering.mode, self.rendering.limit)
            self._resumed(chat, view, progress)
            log.info(
                self._events["resumed"],
                conversation=conversation_id,
                parts_shown=view.parts_done,
                checking=view.doubt is not None,
            )
        if view.done:
            view.journal = None
            await journal.confirm()
        elif ends_turn and not progress and self.rendering.mode != "off":
            # A streamed preview's call may be in flight now: into the row before
            # anything else (the sender's own notes queue behind this one), so that a
            # restart edits that message rather than send the answer anew.
            view.noted_parts = view.parts_done
            await journal.save(_live(view))

    async def deliver_clip(
        self, conversation_id: ConversationId, clip: VoiceClip, journal: DeliveryJournal
    ) -> None:
        where = self._where(conversation_id)
        if where is None:
            await journal.refuse()
            return
        chat, thread = where
        outbox = self.outbox(chat)
        view = PhotoView(clip, thread, outbox.caption_limit, journal=journal)
        progress = journal.progress
        if progress:
            resume_upload(view, progress)
            self._resumed(chat, view, progress)
            log.info(
                self._events["resumed"],
                conversation=conversation_id,
                clip=clip.part,
                checking=view.doubt is not None,
            )
        outbox.put(view)

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
        outbox = self._outboxes.get(chat)
        if outbox is not None:
            outbox.gate.block_for(seconds)
            return
        now = monotonic()
        self._holds = {c: until for c, until in self._holds.items() if until > now}
        until = now + seconds
        self._holds[chat] = max(until, self._holds.get(chat, until))

    def hold_everywhere(self, seconds: float) -> None:
        """Nothing goes to any chat for ``seconds`` (an account-wide wait another
        replica was told)."""
        self.pacer.block_for(seconds)

    def named(self, chat: A) -> ConversationId | None:
        """A conversation of ``chat`` this adapter was given (it parses back to the
        chat): how a wait it was told for the chat is named for the other replicas."""
        return self._names.get(chat)

    def known_chats(self) -> list[A]:
        """The chats this adapter was given a conversation of."""
        return list(self._names)

    def share_rate(self, rate: float) -> None:
        """Replicas: at most ``rate`` calls per second from this one."""
        self.pacer.set_rate(rate)

    async def drain(self) -> None:
        """Wait until every chat has shown everything it was given."""
        for outbox in list(self._outboxes.values()):
            await outbox.wait_empty()

    async def drain_within(self, base: float, cap: float | None = None) -> bool:
        """:meth:`drain`, given ``base`` seconds, and longer (up to ``cap``) while a chat
        with pending text waits out a flood-control block (until it ends, plus
        :data:`AFTER_BLOCK`), or while a call awaits the platform's answer. False when it
        gave up. The bound is weighed again each time it is reached: a 429 still on its
        way when the drain begins extends it once read."""
        start = monotonic()
        limit = start + (base if cap is None else max(cap, base))
        until = start + base
        while True:
            with anyio.move_on_after(max(0.0, min(until, limit) - monotonic())):
                await self.drain()
                return True
            now = monotonic()
            if now >= limit:
                return False
            wanted = self._wanted_until(now)
            if wanted <= now:
                return False
            until = wanted

    async def drain_at_shutdown(self, seconds: float, cap: float | None = None) -> None:
        """:meth:`drain_within` ``seconds`` (up to ``cap``), logging the chats still
        waiting after them (how many, and which)."""
        started = monotonic()
        if not await self.drain_within(seconds, cap):
            event = f"{self.channel_id}_answers_undelivered_at_shutdown"
            waited = round(monotonic() - started, 1)
            chats = [chat for chat, outbox in self._outboxes.items() if outbox.views]
            log.error(event, conversations=len(chats), chats=chats, waited_s=waited)

    def pending(self, chat: A) -> bool:
        """Whether ``chat`` has a final still waiting to be delivered."""
        outbox = self._outboxes.get(chat)
        return outbox is not None and bool(outbox.views)

    # -- what a transport may refine ---------------------------------------------------------

    def _new_outbox(self, chat: A) -> ChatOutbox[A, M]:
        limits = self.wire.limits
        gate = ChatGate(limits.chat_min_interval, burst=limits.chat_burst)
        private = self._private(chat)
        outbox: ChatOutbox[A, M] = ChatOutbox(
            chat, gate, private=private, caption_limit=limits.caption_units
        )
        outbox.final_call = limits.final_call
        return outbox

    def _new_sender(self, outbox: ChatOutbox[A, M]) -> WireSender[A, M]:
        return WireSender(self.wire, outbox, self.rendering, self.pacer, told=self.told)

    def _resumed(self, chat: A, view: View | PhotoView, progress: Mapping[str, object]) -> None:
        """An outbox row an earlier process began was taken up (``view`` brought to what
        its journal says)."""

    # -- inside ----------------------------------------------------------------------------

    def outbox(self, chat: A) -> ChatOutbox[A, M]:
        outbox = self._outboxes.get(chat)
        if outbox is None:
            outbox = self._new_outbox(chat)
            held = self._holds.pop(chat, None)
            if held is not None:
                outbox.gate.block_for(held - monotonic())
            self._outboxes[chat] = outbox
            sender = self._new_sender(outbox)
            self._group.start_soon(sender.run, name=f"{self.wire.name}-chat-{chat}")
        return outbox

    def _where(self, conversation_id: ConversationId) -> tuple[A, str | None] | None:
        try:
            where = self._parse(conversation_id)
        except ValueError:
            log.error(  # noqa: TRY400 - no traceback needed: the id says it all
                self._events["bad_id"], conversation=conversation_id
            )
            return None
        self._names.setdefault(where[0], conversation_id)
        return where

    def _wanted_until(self, now: float) -> float:
        """Until when the pending chats give a reason to keep draining (``now``: none);
        a call still awaiting its answer is a reason to look again in
        :data:`AWAIT_GRACE`."""
        wanted = now
        for outbox in self._outboxes.values():
            if not outbox.views:
                continue
            gate = outbox.gate
            if gate.blocked_until > now:
                wanted = max(wanted, gate.blocked_until + AFTER_BLOCK)
            if gate.calling:
                wanted = max(wanted, now + AWAIT_GRACE)
        return wanted


def _live(view: View) -> dict[str, object]:
    """What a restart needs of an answer's streamed state: its live message, or else
    the key its preview's send may have gone out with (text unknown: ``preview``)."""
    if view.live_id is not None:
        return {"parts_done": view.parts_done, "live_id": view.live_id}
    return {"parts_done": view.parts_done, "key": view.key, "preview": True}
