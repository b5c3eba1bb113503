"""The Telegram adapter: the pump's deliveries, rendered per chat.

``deliver`` only records the delivery in the chat's outbox and returns; each chat has a
sender task (started on its first delivery, in the channel's task group) that talks to
Telegram. A slow or flood-limited chat therefore never holds up the pump or other chats.

A conversation is a chat, or a forum topic in one (``"<chat>:<thread>"``, see
:mod:`thalos_bot_telegram.addressing`). The topics of one forum share the chat's outbox
and sender: Telegram paces a chat as a whole, and a send in doubt is checked by message
id, which all topics of a chat draw from, so nothing else may go to the chat meanwhile.

The adapter also notes the id of every message that arrives in a private chat or a
group (:meth:`TelegramAdapter.watching`), admitted or not, in the counter it was drawn
from (:mod:`thalos_bot_telegram.counter`: the bot account's one counter for private
chats and basic groups, a supergroup's own): the highest id known there is where the
check of a send in doubt starts, and the ids known to be other chats' need no probe
(see :mod:`thalos_bot_telegram.uncertain`). The account's highest id, and each id of a
chat the bot talks with, is kept in the database, so a restarted daemon knows it too
(see :mod:`thalos_bot.channels.delivery.markbook`); a stranger's chat leaves no mark.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from time import monotonic

import anyio
import structlog
from anyio.abc import TaskGroup
from telegram import Bot, Update
from telegram.constants import ChatType

from thalos_bot.channels.delivery.journal import floor_of, resume
from thalos_bot.channels.delivery.markbook import MarkBook
from thalos_bot.channels.delivery.rounds import Rendering
from thalos_bot.channels.final import DeliveryJournal
from thalos_bot.channels.pacing.gate import ChatGate, GlobalPacer
from thalos_bot.channels.ports import Delivery
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest
from thalos_bot_telegram.addressing import Address
from thalos_bot_telegram.approvals import TelegramApprovals
from thalos_bot_telegram.counter import KEPT_OWNERS, CatchUp, Counter, shared_counter
from thalos_bot_telegram.inbound import admit_each
from thalos_bot_telegram.limits import MAX_CAPTION
from thalos_bot_telegram.questions import Outbox, Outcome, Question
from thalos_bot_telegram.sender import ChatSender
from thalos_bot_telegram.wire import TelegramWire

log = structlog.get_logger(__name__)

AFTER_BLOCK = 2.0
"""Seconds a shutdown drain allows past a flood-control block, for the calls it held."""
AWAIT_GRACE = 1.0
"""Seconds past its plain bound a shutdown drain gives a call that awaits Telegram's
answer (a 429 on its way back is then read; a call that hangs is not waited out)."""

_WATCHED = frozenset({ChatType.PRIVATE, ChatType.GROUP, ChatType.SUPERGROUP})


class TelegramAdapter:
    def __init__(
        self,
        bot: Bot,
        group: TaskGroup,
        rendering: Rendering,
        *,
        chat_min_interval: float,
        global_max_rate: float,
        channel_id: str = "telegram",
        marks: MarkBook | None = None,
        known: Mapping[int, int] | None = None,
    ) -> None:
        self.channel_id = ChannelId(channel_id)
        self.gate: Callable[[ConversationId, Delivery], bool] | None = None
        """Webhook replicas: shown every delivery first; False drops it."""
        self.bot = bot
        self.rendering = rendering
        self._group = group
        self._chat_min_interval = chat_min_interval
        self._pacer = GlobalPacer(global_max_rate)
        self.wire = TelegramWire(
            bot, chat_min_interval=chat_min_interval, global_rate=global_max_rate
        )
        self._outboxes: dict[int, Outbox] = {}
        self.marks = marks
        """Where each chat's highest known message id is kept across restarts."""
        self._known: dict[int, int] = dict(known or {})
        """Each chat's mark as the previous process left it (see
        :mod:`thalos_bot.channels.delivery.markbook`)."""
        self._seen: dict[int, int] = dict(self._known)
        """The highest message id known in each chat that has no outbox yet (only in
        memory: a chat's mark is written once the bot talks with it)."""
        self._types: dict[int, str] = {}
        """The type of each group heard from (a private chat's id is positive)."""
        self.account = Counter(shared=True, bound=marks.account if marks is not None else 0)
        """The bot account's counter: every private chat's and basic group's ids."""
        if marks is not None:
            self.account.on_raised = marks.note_account
        self._own: dict[int, Counter] = {}
        """Each supergroup's counter."""
        for chat, mark in self._known.items():
            if shared_counter(chat, None):
                self.account.saw(chat, mark)  # that chat's latest: not another chat's
        self.approvals: TelegramApprovals | None = None
        """Set by the plugin: then this adapter can ask the chat about a tool call."""
        self.told: Callable[[int, float], None] = lambda chat, seconds: None
        """Webhook replicas: each 429's (chat, retry_after), for the store to share."""
        self._holds: dict[int, float] = {}
        """Holds heard of for chats with no outbox yet: chat -> monotonic deadline."""

    def set_catch_up(self, catch_up: CatchUp) -> None:
        """How the account's counter fetches the updates Telegram holds (the poller)."""
        self.account.catch_up = catch_up

    def counter_for(self, chat_id: int) -> Counter:
        """The counter the chat's messages are numbered by."""
        if shared_counter(chat_id, self._types.get(chat_id) if chat_id < 0 else "private"):
            return self.account
        counter = self._own.get(chat_id)
        if counter is None:
            counter = Counter(shared=False, bound=self._known.get(chat_id, 0))
            self._own[chat_id] = counter
        return counter

    async def ask_approval(
        self, conversation_id: ConversationId, request: ApprovalRequest
    ) -> ApprovalAnswer:
        if self.approvals is None:
            return ApprovalAnswer("denied", "no approver")
        address = Address.parse(conversation_id)
        return await self.approvals.ask(address.chat_id, request, address.thread_id)

    def put(self, chat_id: int, view: Question | Outcome) -> None:
        """An approval question for the chat, or the edit that closes one."""
        self.outbox(chat_id).put(view)

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        self.post(conversation_id, event)

    def _told(self, chat_id: int, seconds: float) -> None:
        self.told(chat_id, seconds)  # looked up at each 429: the plugin sets it late

    def hold(self, chat_id: int, seconds: float) -> None:
        """Another replica was told to wait ``seconds`` in this chat: nothing goes there
        from here either until then."""
        outbox = self._outboxes.get(chat_id)
        if outbox is not None:
            outbox.gate.block_for(seconds)
        else:
            now = monotonic()
            self._holds = {c: u for c, u in self._holds.items() if u > now}  # run out
            until = now + seconds
            self._holds[chat_id] = max(until, self._holds.get(chat_id, until))

    def share_rate(self, rate: float) -> None:
        """Webhook replicas: at most ``rate`` calls per second from this one."""
        self._pacer.set_rate(rate)

    def post(self, conversation_id: ConversationId, event: Delivery) -> None:
        """Record ``event`` for the conversation's chat (never waits)."""
        if self.gate is not None and not self.gate(conversation_id, event):
            return  # replicas: another one has taken this chat over
        try:
            address = Address.parse(conversation_id)
        except ValueError:
            log.error(  # noqa: TRY400 - no traceback needed: the id says it all
                "telegram_bad_conversation_id", conversation=conversation_id
            )
            return
        self.outbox(address.chat_id).apply(event, _topic(address.thread_id))

    async def deliver_final(
        self,
        conversation_id: ConversationId,
        text: str,
        journal: DeliveryJournal,
        *,
        ends_turn: bool,
    ) -> None:
        """An outbox row: queued like any delivery; its chat's sender notes its progress
        in ``journal`` and confirms it once every part is shown (see
        :mod:`thalos_bot.channels.delivery.journal`)."""
        try:
            address = Address.parse(conversation_id)
        except ValueError:
            log.error(  # noqa: TRY400 - no traceback needed: the id says it all
                "telegram_bad_conversation_id", conversation=conversation_id
            )
            await journal.refuse()
            return
        chat_id = address.chat_id
        outbox = self.outbox(chat_id)
        view = outbox.final(text, journal, ends_turn=ends_turn, thread=_topic(address.thread_id))
        progress = journal.progress
        if progress:
            resume(view, progress, self.rendering.mode, self.rendering.limit)
            kind = progress.get("counter")
            if chat_id < 0 and chat_id not in self._types and kind in {"account", "chat"}:
                self._types[chat_id] = "group" if kind == "account" else "supergroup"
            counter = self.counter_for(chat_id)
            floor = floor_of(progress)
            if floor is not None:
                counter.raise_bound(floor)  # an id known when the send was made
            if view.doubt is not None:
                counter.resumed(chat_id)
            log.info(
                "telegram_delivery_resumed",
                chat=chat_id,
                parts_shown=view.parts_done,
                checking=view.doubt is not None,
            )
        if view.done:
            view.journal = None
            await journal.confirm()

    def outbox(self, chat_id: int) -> Outbox:
        outbox = self._outboxes.get(chat_id)
        if outbox is None:
            outbox = Outbox(
                chat_id, ChatGate(self._chat_min_interval), self.marks, caption_limit=MAX_CAPTION
            )
            seen = self._seen.pop(chat_id, None)
            if seen is not None:
                outbox.saw(seen)
            held = self._holds.pop(chat_id, None)
            if held is not None:
                outbox.gate.block_for(held - monotonic())
            self._outboxes[chat_id] = outbox
            sender = ChatSender(
                self.wire,
                outbox,
                self.rendering,
                self._pacer,
                lambda: self.counter_for(chat_id),
                told=self._told,
            )
            self._group.start_soon(sender.run, name=f"telegram-chat-{chat_id}")
        return outbox

    def watching(
        self, dispatch: Callable[[Sequence[Update]], None]
    ) -> Callable[[Sequence[Update]], None]:
        """``dispatch``, after noting the id of each message the updates carry."""

        def noted(updates: Sequence[Update]) -> None:
            admit_each(updates, self.saw)  # one malformed update never stops the batch
            dispatch(updates)

        return noted

    async def noting(self, updates: Sequence[Update]) -> None:
        """Note the ids a batch carries and write the marks, before the batch is
        acknowledged: a restarted daemon then knows every id Telegram no longer holds
        for it (the batch is noted again when it is handed over)."""
        admit_each(updates, self.saw)
        if self.marks is not None:
            await self.marks.flush()

    def saw(self, update: Update) -> None:
        """Note a new message's id in a private chat or a group, in its counter (a
        channel is left alone; a malformed update is for admission to judge). The
        chat's own mark is kept only once the bot talks with it (it has an outbox)."""
        message = getattr(update, "message", None)
        chat = getattr(message, "chat", None)
        chat_id = getattr(chat, "id", None)
        message_id = getattr(message, "message_id", None)
        chat_type = getattr(chat, "type", None)
        if not isinstance(chat_type, str) or chat_type not in _WATCHED:
            return
        if not isinstance(chat_id, int) or not isinstance(message_id, int):
            return
        if chat_id < 0:
            self._types[chat_id] = chat_type
        self.counter_for(chat_id).heard(chat_id, message_id)
        outbox = self._outboxes.get(chat_id)
        if outbox is not None:
            outbox.saw(message_id)
        elif message_id > self._seen.get(chat_id, 0):
            self._seen.pop(chat_id, None)
            self._seen[chat_id] = message_id  # newest last: the oldest go first
            if len(self._seen) > KEPT_OWNERS:
                del self._seen[next(iter(self._seen))]

    async def drain(self) -> None:
        """Wait until every chat has shown everything it was given."""
        for outbox in list(self._outboxes.values()):
            await outbox.wait_empty()

    @property
    def pending_chats(self) -> int:
        return sum(1 for outbox in self._outboxes.values() if outbox.views)

    def pending_chat_ids(self) -> list[int]:
        return [chat for chat, outbox in self._outboxes.items() if outbox.views]

    async def drain_within(self, base: float, cap: float) -> bool:
        """:meth:`drain`, given ``base`` seconds, and longer (up to ``cap``) while a chat
        with pending text waits out a flood-control block (until it ends, plus
        :data:`AFTER_BLOCK`), or for :data:`AWAIT_GRACE` while a call awaits Telegram's
        answer. False when it gave up.

        The bound is weighed again each time it is reached, not once at the start: a 429
        still on its way when the drain begins extends it as soon as it is read.
        """
        start = monotonic()
        limit = start + cap
        until = start + base
        while True:
            with anyio.move_on_after(max(0.0, min(until, limit) - monotonic())):
                await self.drain()
                return True
            now = monotonic()
            if now >= limit:
                return False
            wanted = self._wanted_until(now, awaited=start + base + AWAIT_GRACE)
            if wanted <= now:
                return False
            until = wanted

    def _wanted_until(self, now: float, awaited: float) -> float:
        """Until when the pending chats give a reason to keep draining (``now``: none);
        a call still awaiting its answer is a reason until ``awaited``."""
        wanted = now
        for outbox in self._outboxes.values():
            if not outbox.views:
                continue
            gate = outbox.gate
            if gate.blocked_until > now:
                wanted = max(wanted, gate.blocked_until + AFTER_BLOCK)
            if gate.calling:
                wanted = max(wanted, awaited)
        return wanted


def _topic(thread_id: int | None) -> str | None:
    """A forum topic as the kit holds it (opaque)."""
    return None if thread_id is None else str(thread_id)
