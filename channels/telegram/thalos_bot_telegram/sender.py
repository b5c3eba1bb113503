"""The per-chat sender: works through one chat's outbox, one Bot API call at a time.

Each round it looks at the *latest* desired state, picks one call (the typing
indicator, or the next step of the current answer or notice), waits until the chat's
pacing and any retry_after allow it, and makes it. New deliveries wake it while it waits,
so a wait never delays the newest text and never sends a stale one. A call that
completes what the user reads (an answer's final part, a notice) may use the chat's
short burst: a one-line answer's final edit follows its live preview at once.

After a failure, what happens depends on whether Telegram may have acted on the call
(see :mod:`thalos_bot_telegram.errors`). One that cannot have arrived is made again. An
edit or a draft in doubt is made again too, since repeating it cannot duplicate
anything. A sendMessage in doubt is checked before anything else goes to the chat (see
:mod:`thalos_bot_telegram.uncertain`): its id is adopted if it arrived, and only if it
did not is it sent again.

An outbox row's answer (see :mod:`thalos_bot.channels.delivery.journal`) is journaled as it goes:
before each of its messages is sent, what a restarted daemon needs to check it; after,
how many parts are shown; and once all are, the row is confirmed.
In a group, drafts are not used (Telegram offers them in private chats only): a
``draft`` setting streams by editing there. Every call names the answer's forum topic
(``message_thread_id``), and an answer's first message quotes the message it answers
(``reply_parameters``, sent even if that message was deleted meanwhile).
"""

from __future__ import annotations

from collections.abc import Callable
from time import monotonic
from typing import TypeVar

import structlog
from telegram import Bot, InlineKeyboardMarkup, ReplyParameters
from telegram.constants import ChatAction, ParseMode
from telegram.error import TelegramError

from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.channels.delivery.journal import Journaling
from thalos_bot.channels.delivery.photo import PhotoView, SendPhoto
from thalos_bot.channels.delivery.question import SendQuestion
from thalos_bot.channels.delivery.rounds import ChatRounds, Rendering
from thalos_bot.channels.delivery.view import Draft, Edit, Send, Step, View
from thalos_bot.channels.pacing.gate import GlobalPacer
from thalos_bot.channels.text.measure import utf16_len
from thalos_bot.channels.text.split import Part
from thalos_bot_telegram.checking import Checking
from thalos_bot_telegram.counter import Counter
from thalos_bot_telegram.errors import classify
from thalos_bot_telegram.markdown import escape, to_html
from thalos_bot_telegram.questions import Ask, Outbox, Outcome, Question
from thalos_bot_telegram.uncertain import InDoubt, QuestionFields, TextFields

log = structlog.get_logger(__name__)

JOURNAL = Journaling("telegram")

T = TypeVar("T")


class ChatSender(Checking, ChatRounds[int, InlineKeyboardMarkup]):
    def __init__(
        self,
        bot: Bot,
        outbox: Outbox,
        rendering: Rendering,
        pacer: GlobalPacer,
        counter: Callable[[], Counter],
        *,
        told: Callable[[int, float], None] = lambda chat, seconds: None,
    ) -> None:
        super().__init__(outbox, rendering, pacer, channel="telegram")
        self.outbox: Outbox = outbox
        self.chat_id = outbox.chat_id
        self._told = told
        """Called with each 429's ``retry_after`` (replicas: shared through the store)."""
        self.bot = bot
        self.counter = counter
        """The message-id counter the chat draws from (see
        :mod:`thalos_bot_telegram.counter`; asked at each send, as the chat's kind may be
        learnt late)."""
        self.in_doubt: InDoubt | None = None
        """A sendMessage whose outcome is being checked; nothing else is sent meanwhile."""

    def _classify(self, exc: Exception) -> Classified | None:
        return classify(exc) if isinstance(exc, TelegramError) else None

    async def _after_call(self) -> None:
        if self.outbox.marks is not None:
            # A new message of the bot's is kept before the next call, and before its
            # row is confirmed (see :mod:`thalos_bot.channels.delivery.markbook`).
            await self.outbox.marks.flush()

    def _note_failure(self, method: str, failure: Classified) -> None:
        super()._note_failure(method, failure)
        if failure.failure is Failure.RETRY_AFTER:
            self._told(self.chat_id, failure.retry_after or 1.0)

    # -- calls -------------------------------------------------------------------------

    async def _typing(self) -> None:
        self.outbox.typing_at = monotonic() + self.rendering.typing_interval
        answer = self.outbox.open_answer
        thread = _int(answer.thread) if answer is not None else None
        await self._call(
            "action",
            "sendChatAction",
            lambda: self.bot.send_chat_action(
                self.chat_id, ChatAction.TYPING, message_thread_id=thread
            ),
        )

    async def _perform(self, view: View, step: Step) -> None:
        if isinstance(step, Send):
            await self._send(view, step)
        elif isinstance(step, Edit):
            await self._edit(view, step)
        else:
            await self._draft(view, step)

    def _text(self, view: View, source: str) -> TextFields:
        if not view.plain:
            html = to_html(source)
            if html.strip():
                return {"text": html, "parse_mode": ParseMode.HTML}
        return {"text": source}

    def _floor(self, counter: Counter) -> int | None:
        """Where the check of this send would start: the counter's bound (None: no id
        is known in it yet)."""
        return counter.bound or None

    async def _send(self, view: View, step: Send) -> None:
        text = self._text(view, step.part.text)
        counter = self.counter()
        floor = self._floor(counter)
        if step.commit:
            shared = "account" if counter.shared else "chat"
            await JOURNAL.note(view, self.chat_id, floor=floor, fields=dict(text), counter=shared)
        quoted = _int(view.reply_to)
        reply = (
            ReplyParameters(quoted, allow_sending_without_reply=True)
            if quoted is not None
            else None
        )
        pending = counter.begin(self.chat_id)
        result = await self._call(
            "message",
            "sendMessage",
            lambda: self.bot.send_message(
                self.chat_id,
                message_thread_id=_int(view.thread),
                reply_parameters=reply,
                **text,
            ),
        )
        if not isinstance(result, Classified):
            counter.sent(pending, result.message_id)
            self._delivered(view, step, result.message_id)
            return
        kind = result.failure
        if kind is Failure.MAYBE_SENT:
            self._doubt(view, step, text, floor, (counter, pending))
            return
        counter.not_sent(pending)
        if kind in {Failure.RETRY_AFTER, Failure.NOT_SENT}:
            return  # nothing arrived: the next round sends the latest text
        if kind is Failure.BAD_ENTITIES and not view.plain:
            view.plain = True  # the next round sends this part as plain text
            return
        self._give_up(view, step.commit, step.part)

    def _delivered(self, view: View, step: Send, message_id: int) -> None:
        self.outbox.saw(message_id)
        view.reply_to = None  # only the answer's first message quotes
        if step.commit:
            view.commit(step.part)
        else:
            view.shown_live(str(message_id), step.part)

    async def _photo(self, view: PhotoView) -> None:
        step = SendPhoto(view.caption)
        counter = self.counter()
        floor = self._floor(counter)
        pending = counter.begin(self.chat_id)
        result = await self._call(
            "message",
            "sendPhoto",
            lambda: self.bot.send_photo(
                self.chat_id,
                photo=view.image.data,
                caption=step.caption,
                message_thread_id=_int(view.thread),
            ),
        )
        if not isinstance(result, Classified):
            counter.sent(pending, result.message_id)
            self.outbox.saw(result.message_id)
            view.sent = True
            return
        kind = result.failure
        if kind is Failure.MAYBE_SENT:
            self._doubt(view, step, {"text": step.caption}, floor, (counter, pending))
            return
        counter.not_sent(pending)
        if kind in {Failure.RETRY_AFTER, Failure.NOT_SENT}:
            return  # nothing arrived: the next round sends it again
        view.sent = True  # refused for good (logged): the answer it belongs to is out

    async def _ask(self, view: Question) -> None:
        """Send an approval question (its keyboard with it)."""
        step: Ask = SendQuestion(view.html, view.markup)
        fields: QuestionFields = {
            "text": step.html,
            "parse_mode": ParseMode.HTML,
            "reply_markup": step.markup,
        }
        counter = self.counter()
        floor = self._floor(counter)
        pending = counter.begin(self.chat_id)
        result = await self._call(
            "message",
            "sendMessage",
            lambda: self.bot.send_message(
                self.chat_id, message_thread_id=_int(view.thread), **fields
            ),
        )
        if not isinstance(result, Classified):
            counter.sent(pending, result.message_id)
            self.outbox.saw(result.message_id)
            view.shown(str(result.message_id))
            return
        kind = result.failure
        if kind is Failure.MAYBE_SENT:
            self._doubt(view, step, fields, floor, (counter, pending))
            view.checking = self.in_doubt is not None
            return
        counter.not_sent(pending)
        if kind in {Failure.RETRY_AFTER, Failure.NOT_SENT}:
            return  # nothing arrived: the next round asks again, after the wait
        view.give_up()  # refused for good (logged): the question is not asked

    async def _close_question(self, view: Outcome) -> None:
        """Edit a question to say how it ended, which removes its keyboard."""
        step = view.next_step(self.mode)
        assert step is not None
        result = await self._call(
            "message",
            "editMessageText",
            lambda: self.bot.edit_message_text(
                step.html,
                chat_id=self.chat_id,
                message_id=int(step.message_id),
                parse_mode=ParseMode.HTML,
            ),
        )
        if isinstance(result, Classified) and result.failure in {
            Failure.RETRY_AFTER,
            Failure.NOT_SENT,
            Failure.MAYBE_SENT,
        }:
            return  # an edit cannot duplicate anything: it is made again
        view.edited = True  # done, or refused for good (logged)

    async def _edit(self, view: View, step: Edit) -> None:
        text = self._text(view, step.part.text)
        if step.commit:
            await JOURNAL.note(view, self.chat_id, live_id=step.message_id)
        result = await self._call(
            "message",
            "editMessageText",
            lambda: self.bot.edit_message_text(
                chat_id=self.chat_id, message_id=int(step.message_id), **text
            ),
        )
        if not isinstance(result, Classified) or result.failure is Failure.NOT_MODIFIED:
            view.live_text = step.part.text
            if step.commit:
                view.commit(step.part)
            return
        kind = result.failure
        if kind in {Failure.RETRY_AFTER, Failure.NOT_SENT}:
            return
        if kind is Failure.MAYBE_SENT:
            view.live_text = None  # unknown: the next round edits again (edits are idempotent)
            return
        if kind is Failure.BAD_ENTITIES and not view.plain:
            view.plain = True
            return
        if kind in {Failure.GONE, Failure.NOT_EDITABLE}:
            view.live_id = None  # deleted by the user: the part continues in a new message
            view.live_text = None
            return
        self._give_up(view, step.commit, step.part)

    async def _draft(self, view: View, step: Draft) -> None:
        now = monotonic()
        text = self._draft_text(view, step)
        result = await self._call(
            "draft",
            "sendMessageDraft",
            lambda: self.bot.send_message_draft(self.chat_id, step.draft_id, **text),
        )
        if not isinstance(result, Classified) or result.failure is Failure.NOT_MODIFIED:
            view.draft_key = step.key
            view.draft_at = now
            return
        kind = result.failure
        if kind in {Failure.RETRY_AFTER, Failure.NOT_SENT, Failure.MAYBE_SENT}:
            return  # drafts are idempotent: the next round sends the latest one
        if kind is Failure.BAD_ENTITIES and not view.plain:
            view.plain = True
            return
        # Only a server that lacks drafts turns them off (for every chat); one chat's
        # refusal (the user blocked the bot, the chat is gone) says nothing about others.
        if kind is Failure.UNSUPPORTED and self.rendering.mode == "draft":
            log.warning(
                "telegram_drafts_unavailable",
                chat=self.chat_id,
                note="streaming falls back to editing a message",
            )
            self.rendering.mode = "edit"

    def _draft_text(self, view: View, step: Draft) -> TextFields:
        fields = self._text(view, step.part.text)
        activity = step.activity
        if activity and utf16_len(step.part.text) + utf16_len(activity) + 2 <= self.rendering.limit:
            if "parse_mode" in fields:
                fields["text"] = f"{fields['text']}\n\n<i>{escape(activity)}</i>"
            else:
                fields["text"] = f"{fields['text']}\n\n{activity}"
        return fields

    def _give_up(self, view: View, complete: bool, part: Part) -> None:
        """Telegram refused this part for good: skip it (a complete part), or stop
        streaming this answer (its final text is still attempted)."""
        if complete:
            view.refused = True
            view.commit(part)
        else:
            view.streaming = False


def _int(ref: str | None) -> int | None:
    """A kit reference (a thread, a message) as Telegram numbers it; None when it is no
    Telegram id."""
    return int(ref) if ref is not None and ref.lstrip("-").isdigit() else None
