"""What a Telegram message carries besides text, and its key in the media store.

A photo arrives in several sizes; the largest one within the 20 MB download limit is
taken. Each file is known to the store as ``telegram:<file_unique_id>``, so that a
later reply to the message can ask for it again without downloading it.
"""

from __future__ import annotations

from telegram import Message, PhotoSize

from thalos_bot.channels.intake.files import RemoteFile
from thalos_bot.domain.attachments import Reattach
from thalos_bot.media.documents import might_read
from thalos_bot.media.limits import TELEGRAM_DOWNLOAD_LIMIT


def _origin(unique_id: str) -> str:
    return f"telegram:{unique_id}"


def _largest_photo(sizes: tuple[PhotoSize, ...]) -> PhotoSize | None:
    within = [s for s in sizes if (s.file_size or 0) <= TELEGRAM_DOWNLOAD_LIMIT]
    pool = within or list(sizes)
    return max(pool, key=lambda s: s.width * s.height, default=None)


def file_of(message: Message) -> RemoteFile | None:
    """The file a message carries, or None (text, sticker, location, ...)."""
    if message.photo:
        photo = _largest_photo(message.photo)
        if photo is not None:
            return RemoteFile(
                "photo", photo.file_id, _origin(photo.file_unique_id), photo.file_size
            )
    if message.document is not None:
        doc = message.document
        return RemoteFile(
            "document",
            doc.file_id,
            _origin(doc.file_unique_id),
            doc.file_size,
            doc.file_name or "",
            doc.mime_type,
        )
    if message.voice is not None:
        voice = message.voice
        return RemoteFile(
            "voice",
            voice.file_id,
            _origin(voice.file_unique_id),
            voice.file_size,
            "voice.ogg",
            "audio/ogg",
        )
    if message.audio is not None:
        audio = message.audio
        name = audio.file_name or "audio"
        return RemoteFile(
            "audio",
            audio.file_id,
            _origin(audio.file_unique_id),
            audio.file_size,
            name,
            audio.mime_type,
        )
    return None


def reattachment(message: Message) -> tuple[Reattach, ...]:
    """For a reply to a photo or a readable file: ask for it again (the runtime adds it
    when the store still has it)."""
    replied = message.reply_to_message
    if replied is None:
        return ()
    file = file_of(replied)
    if file is None or file.kind in {"voice", "audio"}:
        return ()
    if file.kind == "document" and not might_read(file.name, file.mime_type):
        return ()
    return (Reattach(file.origin),)
