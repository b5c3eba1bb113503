"""The per-chat sender: the kit's engine
(:class:`~thalos_bot.channels.delivery.engine.WireSender`) with Telegram's check of a
send in doubt. Telegram's sends are not idempotent and carry no key, so each new message
is numbered by the counter the chat draws its ids from (:mod:`thalos_bot_telegram.counter`),
and a sendMessage (or sendPhoto, or a question) in doubt is checked by message id before
anything else goes to the chat (:meth:`ChatSender._probe`,
:mod:`thalos_bot_telegram.uncertain`): its id is adopted if it arrived, and only if it
did not is it sent again. An outbox row's journal keeps, before each of its messages is
sent, what a restarted daemon needs for that check: the floor and the exact fields.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from time import monotonic

import anyio
import structlog
from telegram import Bot

from thalos_bot.channels.delivery.engine import Pending, WireSender
from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.channels.delivery.markbook import MarkBook
from thalos_bot.channels.delivery.outbox import ChatOutbox
from thalos_bot.channels.delivery.photo import PhotoView, SendPhoto
from thalos_bot.channels.delivery.question import QuestionView, SendQuestion
from thalos_bot.channels.delivery.rounds import Rendering
from thalos_bot.channels.delivery.view import Send, View
from thalos_bot.channels.delivery.wire import Outgoing
from thalos_bot.channels.pacing.gate import ChatGate, GlobalPacer
from thalos_bot_telegram.counter import Counter
from thalos_bot_telegram.counter import Pending as Numbered
from thalos_bot_telegram.limits import LIMITS
from thalos_bot_telegram.uncertain import InDoubt, Plan, TextFields, Verdict
from thalos_bot_telegram.wire import Markup, TelegramWire

log = structlog.get_logger(__name__)

EXPECTED_IN_PROBES = frozenset({Failure.NOT_MODIFIED, Failure.GONE, Failure.NOT_EDITABLE})
"""A probe's answers that say something about the message, not about a fault."""


@dataclass(frozen=True, slots=True)
class Ticket:
    """A new message, as the counter it draws its id from knows it."""

    counter: Counter
    pending: Numbered
    floor: int | None
    """Where a check of it would start: the counter's bound (None: no id known yet)."""


class Outbox(ChatOutbox[int, Markup]):
    """A chat's outbox; each message id seen in the chat goes to ``marks`` (None:
    nowhere), which keeps the highest across restarts (where a check of a send in doubt
    starts)."""

    def __init__(self, chat_id: int, gate: ChatGate, marks: MarkBook | None) -> None:
        super().__init__(chat_id, gate, private=chat_id > 0, caption_limit=LIMITS.caption_units)
        self.chat_id = chat_id
        self.marks = marks

    def saw(self, message_id: int) -> None:
        """A message with this id exists in the chat (the mark keeps the highest)."""
        if self.marks is not None:
            self.marks.note(str(self.chat_id), message_id)


class ChatSender(WireSender[int, Markup]):
    def __init__(
        self,
        wire: TelegramWire,
        outbox: Outbox,
        rendering: Rendering,
        pacer: GlobalPacer,
        counter: Callable[[], Counter],
        *,
        told: Callable[[int | None, float], None] = lambda chat, seconds: None,
    ) -> None:
        super().__init__(wire, outbox, rendering, pacer, told=told)
        self.outbox: Outbox = outbox
        self.chat_id = outbox.chat_id
        self.bot: Bot = wire.bot
        self.counter = counter
        """The message-id counter the chat draws from (asked at each send, as the chat's
        kind may be learnt late)."""
        self.in_doubt: InDoubt | None = None

    async def _after_call(self) -> None:
        if self.outbox.marks is not None:
            # A new message of the bot's is kept before the next call, and before its
            # row is confirmed (see :mod:`thalos_bot.channels.delivery.markbook`).
            await self.outbox.marks.flush()

    # -- the engine's hooks: every new message numbered, a send in doubt checked --------

    def _begin(self) -> Ticket:
        counter = self.counter()
        floor = counter.bound or None
        return Ticket(counter, counter.begin(self.chat_id), floor)

    def _noted(self, message: Outgoing[Markup], ticket: object) -> dict[str, object]:
        assert isinstance(ticket, Ticket)
        shared = "account" if ticket.counter.shared else "chat"
        fields = dict(TelegramWire.fields(message))
        return {"floor": ticket.floor, "fields": fields, "counter": shared}

    def _sent(self, ticket: object, ref: str) -> None:
        assert isinstance(ticket, Ticket)
        ticket.counter.sent(ticket.pending, int(ref))

    def _not_sent(self, ticket: object) -> None:
        assert isinstance(ticket, Ticket)
        ticket.counter.not_sent(ticket.pending)

    def _seen(self, ref: str) -> None:
        self.outbox.saw(int(ref))

    def _doubt(
        self,
        view: Pending[Markup],
        message: Outgoing[Markup],
        ticket: object,
        step: Send | None = None,
    ) -> None:
        assert isinstance(ticket, Ticket)
        counter, pending = ticket.counter, ticket.pending
        if ticket.floor is None:
            # No id is known in the chat's counter yet (nothing was received since the
            # start, none kept from before), so there is no safe place to start
            # checking: send it again.
            counter.not_sent(pending)
            log.warning(
                "telegram_send_unverifiable",
                chat=self.chat_id,
                note="no message id known in this chat; the message is sent again",
            )
            return
        fields = TelegramWire.fields(message)
        sent: Send | SendPhoto | SendQuestion[Markup]
        if isinstance(view, PhotoView):
            sent, fields = SendPhoto(message.text), {"text": message.text}
        elif isinstance(view, QuestionView):
            sent = SendQuestion(view.html, view.markup)
        else:
            assert step is not None
            sent = step
        counter.doubt(pending)
        note = "checking whether the message arrived before sending it again"
        self._check(InDoubt(view, sent, fields, ticket.floor, counter, pending), note)

    def _check(self, doubt: InDoubt, note: str) -> None:
        self.in_doubt = doubt
        log.info("telegram_send_uncertain", chat=self.chat_id, floor=doubt.floor, note=note)

    # -- the check of a send in doubt, one step per round ---------------------------------

    def _recheck(self, view: View | PhotoView) -> bool:
        """Take up the check of a send (or a kept clip's upload, probed by its caption)
        an earlier process left in doubt."""
        assert view.doubt is not None
        noted = view.doubt
        view.doubt = None
        floor, fields = noted.get("floor"), noted.get("fields")
        counter = self.counter()
        pending = counter.take_resumed(self.chat_id)
        step: object = (
            view.next_step(self.rendering.mode)
            if isinstance(view, PhotoView)
            else view.next_step(self.rendering.mode, monotonic(), self.rendering.limit)
        )
        if (
            not isinstance(step, Send | SendPhoto)
            or not isinstance(floor, int)
            or not isinstance(fields, dict)
            or "text" not in fields
        ):
            counter.not_sent(pending)
            return False
        text: TextFields = {"text": str(fields["text"])}
        if isinstance(step, SendPhoto):
            note = "an upload left in doubt before the restart is checked first"
        else:
            note = "a send left in doubt before the restart is checked before sending again"
            if "parse_mode" in fields:
                text["parse_mode"] = str(fields["parse_mode"])
        self._check(InDoubt(view, step, text, floor, counter, pending), note)
        return True

    async def _probe(self) -> None:
        doubt = self.in_doubt
        assert doubt is not None
        plan = doubt.plan()
        if plan is Plan.CATCH_UP:
            catch_up = doubt.counter.catch_up
            doubt.caught_up(fetched=True if catch_up is None else await catch_up())
            return
        if plan is Plan.WAIT:
            # Another chat's send that may hold a lower id is unresolved: wait for it
            # (waking for the typing indicator meanwhile).
            typing = self.outbox.open_answer is not None
            delay = max(0.0, self.outbox.typing_at - monotonic()) if typing else None
            with anyio.move_on_after(delay):
                await doubt.counter.changed()
            return
        if plan is not Plan.PROBE:
            self._checked(doubt, Verdict.MISSING if plan is Plan.MISSING else Verdict.GAVE_UP)
            return
        candidate, chat = doubt.candidate, self.chat_id
        if isinstance(doubt.view, PhotoView):
            caption = doubt.fields["text"]
            method = "editMessageCaption"
            call = partial(self.bot.edit_message_caption, caption=caption)
        else:
            method, call = "editMessageText", partial(self.bot.edit_message_text, **doubt.fields)
        result: object = await self._call(
            "message",
            method,
            lambda: call(chat_id=chat, message_id=candidate),
            expected=EXPECTED_IN_PROBES,
        )
        failure = result.failure if isinstance(result, Classified) else None
        verdict = doubt.judge(failure)
        if verdict is Verdict.AGAIN:
            return  # after the wait the failure imposed, the same id is probed again
        if verdict is Verdict.NEXT:
            if failure is Failure.NOT_EDITABLE:
                self.outbox.saw(candidate)  # the user's message
            return
        if not isinstance(result, Classified):
            log.warning("telegram_send_check_edited", chat=self.chat_id, message_id=candidate)
        self._checked(doubt, verdict)

    def _checked(self, doubt: InDoubt, verdict: Verdict) -> None:
        """The check is over: the message arrived at :attr:`InDoubt.candidate`, or not."""
        self.in_doubt = None
        if isinstance(doubt.view, QuestionView):
            doubt.view.checking = False
        arrived = verdict is Verdict.ARRIVED
        candidate = doubt.candidate
        if arrived:
            doubt.counter.sent(doubt.pending, candidate)
        else:
            doubt.counter.not_sent(doubt.pending)
        if verdict is Verdict.GAVE_UP:
            log.error(
                "telegram_send_unresolved",
                chat=self.chat_id,
                probes=doubt.probes,
                note="the message could not be found or ruled out; it is sent again",
            )
            return
        log.info(
            "telegram_send_checked",
            chat=self.chat_id,
            arrived=arrived,
            message_id=candidate if arrived else None,
            probes=doubt.probes,
        )
        if arrived and isinstance(doubt.view, PhotoView):
            self.outbox.saw(candidate)
            doubt.view.sent = True
        elif arrived and isinstance(doubt.view, QuestionView):
            self.outbox.saw(candidate)
            doubt.view.shown(str(candidate))
        elif arrived and isinstance(doubt.step, Send) and isinstance(doubt.view, View):
            self._delivered(doubt.view, doubt.step, str(candidate))
        # else: it did not arrive; the next round sends the view's latest text
