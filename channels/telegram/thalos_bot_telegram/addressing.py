"""Where a Telegram message belongs, and whether a group message is for the bot.

Conversations: a private chat or a group is one conversation (the chat id as a
string); each forum topic is one of its own (``"<chat id>:<thread id>"``). Only a
message that Telegram marks ``is_topic_message`` in a forum counts as in a topic: in an
ordinary group, a reply carries a ``message_thread_id`` too, which names no topic.

In a group the bot answers only what is addressed to it: a ``mention`` entity of its
@username (or a ``text_mention`` of its user id), a reply to one of its messages, or a
command written ``/cmd@its_username``. A file is addressed the same way by its caption
(``caption`` and ``caption_entities``: a media message has no ``text``). The mention is
stripped from the text or caption the model reads. The rule and the stripping are the
kit's (:mod:`thalos_bot.channels.admission.mentions`); the decoding is Telegram's.
"""

from __future__ import annotations

from telegram import Chat, Message, MessageEntity, User

from thalos_bot.channels.admission.mentions import Addressing, addressed, strip_spans
from thalos_bot.channels.text.measure import utf16_index, utf16_len
from thalos_bot.domain.ids import ConversationId
from thalos_bot.domain.slash import command_word
from thalos_bot_telegram.replies import replied_message


def conversation_of(message: Message, chat: Chat) -> ConversationId:
    thread: object = message.message_thread_id
    if chat.is_forum is True and message.is_topic_message is True and isinstance(thread, int):
        return ConversationId(f"{chat.id}:{thread}")
    return ConversationId(str(chat.id))


def words_of(message: Message) -> tuple[str, tuple[MessageEntity, ...]]:
    """What a message says, with its entities: its ``text``, or for a file its
    ``caption`` (whose mentions are ``caption_entities``)."""
    text: object = message.text
    entities: object = message.entities
    if not isinstance(text, str):
        text = message.caption
        entities = message.caption_entities
    if not isinstance(text, str):
        return "", ()
    if not isinstance(entities, tuple):
        entities = ()
    return text, tuple(e for e in entities if isinstance(e, MessageEntity))


def addressed_to(message: Message, bot_id: int | None, username: str | None) -> bool:
    """True when a group message (a text, or a file with its caption) is for the bot."""
    replied = replied_message(message)
    author = replied.from_user if replied is not None else None
    text, entities = words_of(message)
    word = command_word(text)
    addressing = Addressing(
        replies_to_bot=isinstance(author, User) and bot_id is not None and author.id == bot_id,
        mentions=_mention_spans(text, entities, bot_id, username),
        command_for=word.bot if word is not None else None,
    )
    return addressed(addressing, username)


def strip_mentions(message: Message, bot_id: int | None, username: str | None) -> str:
    """The message's words (text or caption) without its mentions of the bot (the words
    around them kept)."""
    text, entities = words_of(message)
    return strip_spans(text, _mention_spans(text, entities, bot_id, username))


def _mention_spans(
    text: str, entities: tuple[MessageEntity, ...], bot_id: int | None, username: str | None
) -> list[tuple[int, int]]:
    """Python string spans of the entities that name the bot: a ``mention`` of its
    @username, or a ``text_mention`` of its user id."""
    wanted = f"@{username}".lower() if username is not None else None
    units = utf16_len(text)
    spans: list[tuple[int, int]] = []
    for entity in entities:
        offset: object = entity.offset
        length: object = entity.length
        if not isinstance(offset, int) or not isinstance(length, int):
            continue
        if offset < 0 or length <= 0 or offset + length > units:
            continue
        start, end = utf16_index(text, offset), utf16_index(text, offset + length)
        named = text[start:end]
        if entity.type == MessageEntity.MENTION:
            if wanted is None or named.lower() != wanted:
                continue
        elif entity.type == MessageEntity.TEXT_MENTION:
            user: object = entity.user
            if bot_id is None or not isinstance(user, User) or user.id != bot_id:
                continue
        else:
            continue
        spans.append((start, end))
    return spans
