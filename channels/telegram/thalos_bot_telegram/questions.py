"""The kit's outbox and question views (:mod:`thalos_bot.channels.delivery`) as a
Telegram chat has them: an approval question carries an inline keyboard, and the chat's
outbox keeps the highest message id known in it (where a check of a send in doubt
starts, see :mod:`thalos_bot_telegram.uncertain`)."""

from __future__ import annotations

from telegram import InlineKeyboardMarkup

from thalos_bot.channels.delivery.markbook import MarkBook
from thalos_bot.channels.delivery.outbox import ChatOutbox
from thalos_bot.channels.delivery.question import QuestionView, SendQuestion
from thalos_bot.channels.pacing.gate import ChatGate

Question = QuestionView[InlineKeyboardMarkup]
Ask = SendQuestion[InlineKeyboardMarkup]


class Outbox(ChatOutbox[int, InlineKeyboardMarkup]):
    """A chat's outbox, with its mark: ``marks`` keeps a raised :attr:`last_id` across
    restarts (None: nowhere)."""

    def __init__(
        self, chat_id: int, gate: ChatGate, marks: MarkBook | None, *, caption_limit: int
    ) -> None:
        super().__init__(chat_id, gate, private=chat_id > 0, caption_limit=caption_limit)
        self.chat_id = chat_id
        self.marks = marks
        self.last_id: int | None = None
        """The highest message id known in the chat, the user's or the bot's (None until
        one is seen)."""

    def saw(self, message_id: int) -> None:
        """A message with this id exists in the chat."""
        if self.last_id is None or message_id > self.last_id:
            self.last_id = message_id
            if self.marks is not None:
                self.marks.note(self.chat_id, message_id)
