"""The kit's outbox and question views (:mod:`thalos_bot.channels.delivery`) as a
Telegram chat has them: an approval question carries an inline keyboard."""

from __future__ import annotations

from telegram import InlineKeyboardMarkup

from thalos_bot.channels.delivery.outbox import ChatOutbox
from thalos_bot.channels.delivery.question import (
    EditQuestion,
    OutcomeView,
    QuestionView,
    SendQuestion,
)

__all__ = ["Ask", "EditQuestion", "Outbox", "Outcome", "Question"]

Question = QuestionView[InlineKeyboardMarkup]
Outcome = OutcomeView[InlineKeyboardMarkup]
Ask = SendQuestion[InlineKeyboardMarkup]
Outbox = ChatOutbox[InlineKeyboardMarkup]
