"""Which updates become messages for the pump, and which are ignored.

Only private chats are served. A sender who is not allowed is dropped without a word (a
reply would tell a prober the bot exists), and logged at debug without the text. Every
accepted sender runs as the one configured security context: nothing taken from
Telegram (user id, username) reaches authorization.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog
from telegram import Update
from telegram.constants import ChatType

from thalos_bot.channels.ports import InboundMessage, Sender
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.domain.security import SecurityContext

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class NotText:
    """An allowed user sent something other than text (photo, voice, sticker, file...)."""

    conversation_id: ConversationId


@dataclass(frozen=True, slots=True)
class Admission:
    channel_id: ChannelId
    allowed_user_ids: frozenset[int]
    context: SecurityContext

    def admit(self, update: Update) -> InboundMessage | NotText | None:
        message = update.message
        if message is None:
            log.debug("telegram_update_ignored", update_id=update.update_id, reason="not a message")
            return None
        chat = message.chat
        if chat.type != ChatType.PRIVATE:
            log.debug(
                "telegram_update_ignored",
                update_id=update.update_id,
                reason="not a private chat",
                chat_type=chat.type,
            )
            return None
        user = message.from_user
        if user is None or user.is_bot or user.id not in self.allowed_user_ids:
            log.debug(
                "telegram_sender_not_allowed",
                update_id=update.update_id,
                user_id=user.id if user is not None else None,
            )
            return None
        conversation = ConversationId(str(chat.id))
        if message.text is None:
            log.debug("telegram_not_text", update_id=update.update_id, chat=chat.id)
            return NotText(conversation)
        return InboundMessage(
            channel_id=self.channel_id,
            conversation_id=conversation,
            sender=Sender(self.context, user.first_name or ""),
            text=_translate(message.text),
            received_at=message.date,
        )


def _translate(text: str) -> str:
    """Telegram's Start button sends ``/start``: answer it with the help text."""
    words = text.split(maxsplit=1)
    if words and words[0].split("@", 1)[0].lower() == "/start":
        return "/help"
    return text
