"""Groups, forum topics, mentions and replies, for the Telegram fake.

Strict like the Bot API: a ``message_thread_id`` must name a topic of a forum
supergroup ("message thread not found" otherwise, in an ordinary group too), and a
message sent into a topic carries ``message_thread_id`` and ``is_topic_message``. In a
forum topic every message without an explicit reply carries the topic's opening
service message (``forum_topic_created``) as ``reply_to_message``, as on Telegram.

Test side (functions over a :class:`TelegramFake`):
    open_topic(fake, chat_id, user_id, name) -> thread id (the service message's id)
    push_group_text(fake, chat_id, user_id, text, *, reply_to=None, quote=None,
                    thread=None, chat_type="supergroup") -> update_id
                                    ("@name" words get mention entities)
    push_group_file(fake, chat_id, user_id, kind, data, *, caption=None, thread=None,
                    reply_to=None, file_name=None, mime_type=None, reported_size=None,
                    chat_type="supergroup", caption_entities=None) -> update_id
                                    (a photo, document or voice note; "@name" words of
                                    the caption get ``caption_entities``, as on Telegram)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from tests.fakes.telegram_content import command_entities
from tests.fakes.telegram_html import utf16_len
from tests.fakes.telegram_wire import Json, bad_request

if TYPE_CHECKING:
    from tests.fakes.telegram_api import TelegramFake
    from tests.fakes.telegram_state import Chat

_MENTION = re.compile(r"(?<![\w@])@[A-Za-z0-9_]{5,32}\b")


def checked_thread(chat: Chat, topics: set[int], params: Json) -> int | None:
    """The topic a send goes to, or None; refuses a thread the chat does not have."""
    thread = params.get("message_thread_id")
    if thread is None:
        return None
    if not chat.is_forum or thread not in topics:
        raise bad_request("message thread not found")
    return int(thread)


def topic_fields(thread: int | None) -> Json:
    return {} if thread is None else {"message_thread_id": thread, "is_topic_message": True}


def mention_entities(text: str) -> list[Json]:
    return [
        {
            "type": "mention",
            "offset": utf16_len(text[: match.start()]),
            "length": utf16_len(match.group()),
        }
        for match in _MENTION.finditer(text)
    ]


def open_topic(fake: TelegramFake, chat_id: int, user_id: int, name: str) -> int:
    """A member creates a forum topic; its id is the service message's id."""
    content: Json = {"forum_topic_created": {"name": name, "icon_color": 7322096}}
    fake.push_message(chat_id, user_id, chat_type="supergroup", content=content)
    created = fake.messages(chat_id, include_incoming=True)[-1]
    thread = created.message_id
    fake.add_topic(chat_id, thread)
    return thread


def push_group_text(
    fake: TelegramFake,
    chat_id: int,
    user_id: int,
    text: str,
    *,
    reply_to: int | None = None,
    quote: str | None = None,
    thread: int | None = None,
    chat_type: str = "supergroup",
) -> int:
    """A text in a supergroup (or one of its topics; or, with ``chat_type``, any chat),
    optionally replying to a message."""
    entities = sorted(
        command_entities(text) + mention_entities(text), key=lambda e: int(e["offset"])
    )
    content: Json = {"text": text}
    if entities:
        content["entities"] = entities
    content |= topic_fields(thread) | _reply_fields(fake, chat_id, reply_to, thread)
    if quote is not None:
        content["quote"] = {"text": quote, "position": 0}
    return fake.push_message(chat_id, user_id, chat_type=chat_type, content=content)


def push_group_file(
    fake: TelegramFake,
    chat_id: int,
    user_id: int,
    kind: Literal["photo", "document", "voice"],
    data: bytes,
    *,
    caption: str | None = None,
    thread: int | None = None,
    reply_to: int | None = None,
    file_name: str | None = None,
    mime_type: str | None = None,
    reported_size: int | None = None,
    chat_type: str = "supergroup",
    caption_entities: list[Json] | None = None,
) -> int:
    """A file in a group (or one of its forum topics), as Telegram sends it: the words
    with it are its ``caption``, their mentions and commands its ``caption_entities``
    (a media message has no ``text`` and no ``entities``). Pass ``caption_entities`` to
    give others (a ``text_mention``, which a client makes from a picked member)."""
    with fake._lock:
        fake._serial += 1
        name = f"group-{kind}-{fake._serial}"
    file = fake._file(name, data, reported_size)
    content: Json
    if kind == "photo":
        small = fake._file(f"{name}-s", data, reported_size)  # the same image, "smaller"
        content = {
            "photo": [{**small, "width": 90, "height": 60}, {**file, "width": 1280, "height": 960}]
        }
    elif kind == "document":
        document: Json = {**file, "file_name": file_name or "file.bin"}
        if mime_type is not None:
            document["mime_type"] = mime_type
        content = {"document": document}
    else:
        content = {"voice": {**file, "duration": 3, "mime_type": mime_type or "audio/ogg"}}
    if caption is not None:
        content["caption"] = caption
        found = command_entities(caption) + mention_entities(caption)
        entities = caption_entities if caption_entities is not None else found
        entities = sorted(entities, key=lambda e: int(e["offset"]))
        if entities:
            content["caption_entities"] = entities
    content |= topic_fields(thread) | _reply_fields(fake, chat_id, reply_to, thread)
    return fake.push_message(chat_id, user_id, chat_type=chat_type, content=content)


def _reply_fields(
    fake: TelegramFake, chat_id: int, reply_to: int | None, thread: int | None
) -> Json:
    """``reply_to_message``: the message replied to, or in a topic its opening message."""
    target = reply_to if reply_to is not None else thread
    if target is None:
        return {}
    stored = {m.message_id: m for m in fake.messages(chat_id, include_incoming=True)}
    replied = stored[target].payload
    return {"reply_to_message": {k: v for k, v in replied.items() if k != "reply_to_message"}}
