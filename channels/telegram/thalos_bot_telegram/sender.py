"""The per-chat sender: the kit's engine over Telegram's wire, with Telegram's check of a
send in doubt.

Everything a chat's sender does is the engine's
(:class:`~thalos_bot.channels.delivery.engine.WireSender`): one call at a time on the
latest desired state, paced, waiting out retry_after, streaming by drafts in private
chats (a ``draft`` setting streams by editing in groups), journaling an outbox row's
answer as it goes. What is Telegram's own is the check: Telegram's sends are not
idempotent and carry no key, so each new message is numbered by the counter the chat
draws its ids from (:mod:`thalos_bot_telegram.counter`), and a sendMessage (or
sendPhoto, or a question) in doubt is checked by message id before anything else goes
to the chat (:class:`~thalos_bot_telegram.checking.Checking`,
:mod:`thalos_bot_telegram.uncertain`): its id is adopted if it arrived, and only if it
did not is it sent again. An outbox row's journal keeps, before each of its messages is
sent, what a restarted daemon needs for that check: the floor and the exact fields.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from telegram import Bot

from thalos_bot.channels.delivery.engine import Pending, WireSender
from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.channels.delivery.photo import PhotoView, SendPhoto
from thalos_bot.channels.delivery.question import QuestionView, SendQuestion
from thalos_bot.channels.delivery.rounds import Rendering
from thalos_bot.channels.delivery.view import Send
from thalos_bot.channels.delivery.wire import Outgoing
from thalos_bot.channels.pacing.gate import GlobalPacer
from thalos_bot_telegram.checking import Checking
from thalos_bot_telegram.counter import Counter
from thalos_bot_telegram.counter import Pending as Numbered
from thalos_bot_telegram.questions import Outbox
from thalos_bot_telegram.uncertain import InDoubt
from thalos_bot_telegram.wire import Markup, TelegramWire


@dataclass(frozen=True, slots=True)
class Ticket:
    """A new message, as the counter it draws its id from knows it."""

    counter: Counter
    pending: Numbered
    floor: int | None
    """Where a check of it would start: the counter's bound (None: no id known yet)."""


class ChatSender(Checking, WireSender[int, Markup]):
    def __init__(
        self,
        wire: TelegramWire,
        outbox: Outbox,
        rendering: Rendering,
        pacer: GlobalPacer,
        counter: Callable[[], Counter],
        *,
        told: Callable[[int, float], None] = lambda chat, seconds: None,
    ) -> None:
        super().__init__(wire, outbox, rendering, pacer)
        self.outbox: Outbox = outbox
        self.chat_id = outbox.chat_id
        self.bot: Bot = wire.bot
        self.counter = counter
        """The message-id counter the chat draws from (asked at each send, as the chat's
        kind may be learnt late)."""
        self.in_doubt: InDoubt | None = None
        self._told = told
        """Called with each 429's ``retry_after`` (replicas: shared through the store)."""

    def _note_failure(self, method: str, failure: Classified) -> None:
        super()._note_failure(method, failure)
        if failure.failure is Failure.RETRY_AFTER:
            self._told(self.chat_id, failure.retry_after or 1.0)

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
        fields = TelegramWire.fields(message)
        sent: Send | SendPhoto | SendQuestion[Markup]
        if isinstance(view, PhotoView):
            sent, fields = SendPhoto(message.text), {"text": message.text}
        elif isinstance(view, QuestionView):
            sent = SendQuestion(view.html, view.markup)
        else:
            assert step is not None
            sent = step
        self.doubt_numbered(view, sent, fields, ticket.floor, (ticket.counter, ticket.pending))
