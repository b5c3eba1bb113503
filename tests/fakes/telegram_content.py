"""What users post, for the Telegram fake: plausible message content and senders.

File ids are fake and unique per message; sizes and dimensions are plausible. A text
gets the bot_command entities Telegram's clients attach ("/start", "/help@some_bot"),
which python-telegram-bot's CommandHandler relies on.
"""

from __future__ import annotations

import re

from tests.fakes.telegram_html import utf16_len
from tests.fakes.telegram_wire import Json

_COMMAND = re.compile(r"(?<![\w/])/[A-Za-z0-9_]{1,32}(?:@[A-Za-z0-9_]{3,32})?(?![\w/])")


def command_entities(text: str) -> list[Json]:
    return [
        {
            "type": "bot_command",
            "offset": utf16_len(text[: match.start()]),
            "length": utf16_len(match.group()),
        }
        for match in _COMMAND.finditer(text)
    ]


def sender(user_id: int, first_name: str, username: str | None) -> Json:
    user: Json = {"id": user_id, "is_bot": False, "first_name": first_name}
    if username is not None:
        user["username"] = username
    user["language_code"] = "en"
    return user


def media(kind: str, serial: int, text: str | None, caption: str | None) -> Json:
    """Content fields of a message of that kind: text, photo, sticker, voice, document."""
    if kind == "text":
        content: Json = {"text": text or ""}
        entities = command_entities(text or "")
        if entities:
            content["entities"] = entities
        return content
    file = {"file_id": f"fake-{kind}-{serial}", "file_unique_id": f"u{kind}{serial}"}
    if kind == "photo":
        small = {**file, "file_id": f"fake-{kind}-{serial}-s", "width": 90, "height": 60}
        body: Json = {
            "photo": [
                {**small, "file_size": 1200},
                {**file, "width": 1280, "height": 853, "file_size": 98000},
            ]
        }
    elif kind == "sticker":
        body = {
            "sticker": {
                **file,
                "type": "regular",
                "width": 512,
                "height": 512,
                "is_animated": False,
                "is_video": False,
                "emoji": "👍",
            }
        }
    elif kind == "voice":
        body = {"voice": {**file, "duration": 3, "mime_type": "audio/ogg", "file_size": 9000}}
    elif kind == "document":
        document = {**file, "file_name": "notes.txt", "mime_type": "text/plain"}
        body = {"document": {**document, "file_size": 420}}
    else:
        raise ValueError(f"no built-in content for {kind!r}; pass content={{...}}")
    if caption is not None:
        body["caption"] = caption
    return body
