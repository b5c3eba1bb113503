"""Which updates become messages for the pump, and which are ignored.

Private chats are served, and the groups listed in ``groups`` (see
:mod:`thalos_bot_telegram.addressing`: there only messages that mention the bot or reply
to it; a file by its caption). A sender who is not allowed is dropped without a word
(a reply would tell a prober the bot exists), and logged at debug without the text.
Every accepted sender runs as their person (:class:`~thalos_bot.channels.people.Seats`),
in a group exactly as in a private chat: found by their user id among the allowed ones;
nothing else taken from Telegram (a username, a name) reaches authorization.

Every update is admitted on its own: one that is malformed (a message without a chat,
fields of the wrong type) is ignored, and one that still breaks handling is logged by
id and error type (never its text) and skipped, so the rest of the batch is handled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeGuard

import structlog
from telegram import Chat, Update, User
from telegram.constants import ChatType

from thalos_bot.channels.admission.guard import UpdateGuard
from thalos_bot.channels.intake.files import WithFiles
from thalos_bot.channels.people import Seats
from thalos_bot.channels.ports import InboundMessage
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.domain.slash import command_word
from thalos_bot_telegram.addressing import addressed_to, conversation_of, strip_mentions
from thalos_bot_telegram.attachments import file_of, reattachment
from thalos_bot_telegram.replies import quoted

log = structlog.get_logger(__name__)

GUARD = UpdateGuard("telegram")
"""A failure handling one update (its admission, its hand-over, a press on an approval
button) stays with that update, logged as ``telegram_update_failed``."""


@dataclass(frozen=True, slots=True)
class NotText:
    """An allowed user sent something that is neither text nor a file (a sticker, a
    location, a poll...)."""

    conversation_id: ConversationId


_GROUP_TYPES = frozenset({ChatType.GROUP, ChatType.SUPERGROUP})


@dataclass(frozen=True, slots=True)
class Admission:
    channel_id: ChannelId
    allowed_user_ids: frozenset[int]
    seats: Seats
    groups: frozenset[int] = frozenset()
    bot_id: int | None = None
    username: Callable[[], str | None] = lambda: None
    """The bot's @username (from getMe), once known; mentions need it."""
    quote_max_chars: int = 1500

    def admit(self, update: Update) -> InboundMessage | WithFiles | NotText | None:
        message = update.message
        if message is None:
            log.debug("telegram_update_ignored", update_id=update.update_id, reason="not a message")
            return None
        # PTB builds its objects from whatever JSON arrived: check what the types promise.
        chat: object = message.chat
        if not isinstance(chat, Chat) or not is_id(chat.id):
            _malformed(update, "a message without a usable chat")
            return None
        chat_type: object = chat.type
        in_group = isinstance(chat_type, str) and chat_type in _GROUP_TYPES
        in_group = in_group and chat.id in self.groups
        if chat_type != ChatType.PRIVATE and not in_group:
            log.debug(
                "telegram_update_ignored",
                update_id=update.update_id,
                reason="not a private chat or a listed group",
                chat_type=chat_type if isinstance(chat_type, str) else None,
                chat=chat.id,
            )
            return None
        user = message.from_user
        if not self._allowed(user):
            log.debug(
                "telegram_sender_not_allowed",
                update_id=update.update_id,
                user_id=_user_id(user),
            )
            return None
        conversation = conversation_of(message, chat)
        text: object = message.text
        date: object = message.date
        first_name: object = user.first_name
        sender = self.seats.sender(user.id, first_name if isinstance(first_name, str) else "")
        username = self.username()
        if in_group and not addressed_to(message, self.bot_id, username):
            log.debug("telegram_group_not_addressed", update_id=update.update_id, chat=chat.id)
            return None

        def inbound(said: str, at: datetime) -> InboundMessage:
            return InboundMessage(
                channel_id=self.channel_id,
                conversation_id=conversation,
                sender=sender,
                text=said,
                received_at=at,
                attachments=reattachment(message),
                reply_to=quoted(message, self.bot_id, self.quote_max_chars),
                message_ref=str(message.message_id),
            )

        if text is None:
            caption: object = message.caption
            file = file_of(message)
            if file is not None and isinstance(date, datetime):
                if in_group:
                    caption = strip_mentions(message, self.bot_id, username)
                base = inbound(caption if isinstance(caption, str) else "", date)
                group: object = message.media_group_id
                album = group if isinstance(group, str) and group else None
                return WithFiles(base, (file,), album, message.message_id)
            log.debug("telegram_not_text", update_id=update.update_id, chat=chat.id)
            return NotText(conversation)
        if not isinstance(text, str) or not isinstance(date, datetime):
            _malformed(update, "a text message with fields of the wrong type")
            return None
        if in_group:
            text = strip_mentions(message, self.bot_id, username)
        return inbound(_translate(text), date)

    def _allowed(self, user: User | None) -> TypeGuard[User]:
        return (
            isinstance(user, User)
            and user.is_bot is False
            and is_id(user.id)
            and user.id in self.allowed_user_ids
        )


def admit_each(updates: Sequence[Update], handle: Callable[[Update], None]) -> None:
    """``handle`` every update; one that raises is logged and skipped, never the batch."""
    for update in updates:
        try:
            handle(update)
        except Exception as exc:  # noqa: BLE001 - one bad update must not stop the bot
            note = "skipped; the rest of the batch is handled"
            GUARD.failed(exc, conversation=None, notify=None, update_id=update.update_id, note=note)


def _malformed(update: Update, reason: str) -> None:
    log.warning("telegram_update_ignored", update_id=update.update_id, reason=reason)


def _user_id(user: object) -> int | None:
    user_id: object = getattr(user, "id", None)
    return user_id if is_id(user_id) else None


def is_id(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _translate(text: str) -> str:
    """Telegram's Start button sends ``/start``: answer it with the help text."""
    word = command_word(text)
    if word is not None and word.name == "start":
        return "/help"
    return text
