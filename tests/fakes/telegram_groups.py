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
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

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
    content |= topic_fields(thread)
    target = reply_to if reply_to is not None else thread
    if target is not None:
        stored = {m.message_id: m for m in fake.messages(chat_id, include_incoming=True)}
        replied = stored[target].payload
        content["reply_to_message"] = {k: v for k, v in replied.items() if k != "reply_to_message"}
    if quote is not None:
        content["quote"] = {"text": quote, "position": 0}
    return fake.push_message(chat_id, user_id, chat_type=chat_type, content=content)
