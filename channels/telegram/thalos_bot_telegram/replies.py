"""The message a Telegram message replies to, as a :class:`Quoted` for the model.

A partial ``quote`` (the user selected part of the message) wins over the whole
replied message. Only text or a caption is quoted; the quote is capped at the
configured length. In a forum topic every message without an explicit reply still
carries ``reply_to_message``: the topic's opening service message. That is no reply,
and is never quoted.
"""

from __future__ import annotations

from typing import Literal

from telegram import Message, User

from thalos_bot.channels.ports import Quoted


def replied_message(message: Message) -> Message | None:
    """What ``message`` replies to; never the forum topic's opening message."""
    replied = message.reply_to_message
    if not isinstance(replied, Message) or replied.forum_topic_created is not None:
        return None
    if message.is_topic_message and replied.message_id == message.message_thread_id:
        return None
    return replied


def quoted(message: Message, bot_id: int | None, limit: int) -> Quoted | None:
    """What ``message`` replies to, or None (no reply, nothing textual, quoting off)."""
    replied = replied_message(message)
    if replied is None or limit <= 0:
        return None
    part: object = getattr(message.quote, "text", None)
    partial = isinstance(part, str) and bool(part.strip())
    text: object = part if partial else replied.text
    if not partial and text is None:
        text = replied.caption
    if not isinstance(text, str) or not text.strip():
        return None
    cut = len(text) > limit
    return Quoted(
        text[:limit] if cut else text,
        _author(replied.from_user, message.from_user, bot_id),
        partial=partial,
        cut=cut,
    )


def _author(
    author: User | None, sender: User | None, bot_id: int | None
) -> Literal["assistant", "user", "other"]:
    if not isinstance(author, User):
        return "other"
    if bot_id is not None and author.id == bot_id:
        return "assistant"
    if isinstance(sender, User) and author.id == sender.id:
        return "user"
    return "other"
