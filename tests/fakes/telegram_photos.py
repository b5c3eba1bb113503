"""sendPhoto, sendVoice and editMessageCaption, for the Telegram fake.

sendVoice keeps what Telegram shows as a voice message: an upload of OGG encoded with
OPUS (Telegram's words: other formats "may be sent as Audio or Document"; this fake
refuses them, so a voice that would not play as one fails the test), at most 50 MB,
with its ``duration`` a whole number of seconds.

Strict like the Bot API: the photo must be an upload of a PNG or JPEG image
("IMAGE_PROCESS_FAILED" otherwise), within Telegram's photo limits (width + height at
most 10000, sides at most 20:1: "PHOTO_INVALID_DIMENSIONS"), with a caption of at most
1024 characters ("message caption is too long"); a ``message_thread_id`` must name a
forum topic. editMessageCaption with the caption a photo already has answers "message is
not modified", on a user's message "message can't be edited", on an id no message has
"message to edit not found".
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from tests.fakes.telegram_groups import checked_thread, topic_fields
from tests.fakes.telegram_wire import Json, bad_request, ok

if TYPE_CHECKING:
    from tests.fakes.telegram_state import BotWorld

MAX_CAPTION = 1024
MAX_PHOTO_BYTES = 10 * 1024 * 1024
MAX_VOICE_BYTES = 50 * 1024 * 1024


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) of a PNG or baseline/progressive JPEG, or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR":
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if data.startswith(b"\xff\xd8"):
        at = 2
        while at + 9 < len(data) and data[at] == 0xFF:
            marker, length = data[at + 1], struct.unpack(">H", data[at + 2 : at + 4])[0]
            if marker in {0xC0, 0xC1, 0xC2}:
                height, width = struct.unpack(">HH", data[at + 5 : at + 9])
                return int(width), int(height)
            at += 2 + int(length)
    return None


def photo_handlers(world: BotWorld) -> dict[str, Callable[[Json], Json]]:
    def uploaded(params: Json, name: str) -> bytes:
        upload = params.get(name)
        if upload is None:
            raise bad_request(f"there is no {name} in the request")
        if not isinstance(upload, dict) or not isinstance(upload.get("content"), bytes):
            raise bad_request("wrong file identifier/HTTP URL specified")
        data: bytes = upload["content"]
        return data

    def sent(params: Json, kind: str, content: Callable[[int, int], object]) -> Json:
        """The bot's new message in the chat: ``kind``'s ``content``, and the caption."""
        chat = world.chat_of(params)
        thread = checked_thread(chat, world.topics.get(chat.id, set()), params)
        caption = str(params.get("caption") or "")
        if len(caption) > MAX_CAPTION:
            raise bad_request("message caption is too long")
        message_id = world.new_message_id(chat.id)
        payload: Json = {
            "message_id": message_id,
            **topic_fields(thread),
            "from": world.bot_user,
            "chat": chat.to_json(),
            "date": int(time.time()),
            kind: content(chat.id, message_id),
        }
        if caption:
            payload["caption"] = caption
        world.store_sent(chat.id, message_id, kind, caption, payload)
        return ok(payload)

    def send_photo(params: Json) -> Json:
        world.chat_of(params)  # an unknown chat first, as Telegram checks
        data = uploaded(params, "photo")
        size = image_size(data)
        if size is None:
            raise bad_request("IMAGE_PROCESS_FAILED")
        width, height = size
        if len(data) > MAX_PHOTO_BYTES:
            raise bad_request("PHOTO_SAVE_FILE_INVALID")
        if width + height > 10000 or max(width, height) > 20 * max(1, min(width, height)):
            raise bad_request("PHOTO_INVALID_DIMENSIONS")

        def photo(chat_id: int, message_id: int) -> list[Json]:
            return [
                {
                    "file_id": f"sent-photo-{chat_id}-{message_id}",
                    "file_unique_id": f"sp{chat_id}{message_id}",
                    "width": width,
                    "height": height,
                    "file_size": len(data),
                }
            ]

        return sent(params, "photo", photo)

    def edit_message_caption(params: Json) -> Json:
        chat = world.chat_of(params)
        stored = world.stored_of(chat, params, "message to edit not found")
        if not stored.from_bot:
            raise bad_request("message can't be edited")
        if stored.kind == "text":
            raise bad_request("there is no caption in the message to edit")
        caption = str(params.get("caption") or "")
        if len(caption) > MAX_CAPTION:
            raise bad_request("message caption is too long")
        if caption == stored.text:
            raise bad_request(
                "message is not modified: specified new message content and reply markup "
                "are exactly the same as a current content and reply markup of the message"
            )
        version = replace(stored.current, raw_text=caption, text=caption)
        payload = {**stored.payload, "caption": caption, "edit_date": int(time.time())}
        world.replace_stored(
            replace(
                stored, current=version, payload=payload, history=(*stored.history, stored.current)
            )
        )
        return ok(payload)

    def send_voice(params: Json) -> Json:
        world.chat_of(params)
        data = uploaded(params, "voice")
        if not data.startswith(b"OggS") or b"OpusHead" not in data[:512]:
            raise bad_request("VOICE_MESSAGES_FORBIDDEN: not an OGG/OPUS voice")
        if len(data) > MAX_VOICE_BYTES:
            raise bad_request("file is too big")
        duration = params.get("duration")
        if duration is not None and (not str(duration).isdigit() or int(duration) < 0):
            raise bad_request("duration must be a non-negative whole number of seconds")

        def voice(chat_id: int, message_id: int) -> Json:
            return {
                "file_id": f"sent-voice-{chat_id}-{message_id}",
                "file_unique_id": f"sv{chat_id}{message_id}",
                "duration": int(duration or 0),
                "mime_type": "audio/ogg",
                "file_size": len(data),
            }

        return sent(params, "voice", voice)

    return {
        "sendPhoto": send_photo,
        "sendVoice": send_voice,
        "editMessageCaption": edit_message_caption,
    }
