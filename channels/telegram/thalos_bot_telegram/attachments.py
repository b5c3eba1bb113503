"""What a Telegram message carries besides text, and its key in the media store.

A photo arrives in several sizes; the largest one within the 20 MB download limit is
taken. Each file is known to the store as ``telegram:<file_unique_id>``, so that a
later reply to the message can ask for it again without downloading it.
"""

from __future__ import annotations

from telegram import Audio, Document, Message, PhotoSize

from thalos_bot.channels.intake.files import FileKind, RemoteFile
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
    voice = message.voice  # a voice note carries no name and is always Ogg
    if voice is not None:
        origin = _origin(voice.file_unique_id)
        return RemoteFile("voice", voice.file_id, origin, voice.file_size, "voice.ogg", "audio/ogg")
    files: tuple[tuple[FileKind, Document | Audio | None, str], ...] = (
        ("document", message.document, ""),
        ("audio", message.audio, "audio"),
    )
    for kind, file, unnamed in files:  # a message carries one of them at most
        if file is not None:
            origin = _origin(file.file_unique_id)
            name = file.file_name or unnamed
            return RemoteFile(kind, file.file_id, origin, file.file_size, name, file.mime_type)
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
