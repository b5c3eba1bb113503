"""Attachments into the media store: ``m.image``, ``m.file`` and ``m.audio``.

The file is fetched through the homeserver's authenticated media API, checked against
the model's limits (images scaled, PDFs and text files read in worker threads, see
:mod:`thalos_bot.media`), and handed over with the message's caption. A voice message or
audio file goes through the configured transcription service; the person sees what was
heard. Anything over a limit gets a notice naming it, and nothing of that message is
sent to the model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import structlog

from thalos_bot.channels.ports import InboundMessage
from thalos_bot.domain.attachments import Attachment
from thalos_bot.media.documents import is_svg, might_read, not_understood, read_document_off_loop
from thalos_bot.media.images import prepare_image
from thalos_bot.media.limits import MediaRejectedError
from thalos_bot.media.transcription import Transcriber, TranscriptionError
from thalos_bot_matrix.attachments import AttachmentError, content_uri, decrypt
from thalos_bot_matrix.client import MatrixClient, MatrixError, UnreachableError
from thalos_bot_matrix.events import JSON, text_field

log = structlog.get_logger(__name__)

DOWNLOAD_LIMIT = 20 * 1024 * 1024
"""The most the channel downloads of one file."""
TOO_BIG = "That file is larger than 20 MB, the most this bot downloads. Send a smaller one."
NOT_DOWNLOADED = "That file could not be downloaded from the homeserver. Try sending it again."
UNREADABLE_FILE = (
    "That encrypted file could not be read (its key or checksum did not match what "
    "was downloaded). Try sending it again."
)
NO_TRANSCRIPTION = (
    "Voice messages need a transcription service: add a [transcription] section to bot.toml "
    "(base_url and model of an OpenAI-compatible /audio/transcriptions endpoint, the key "
    "in THALOS_TRANSCRIPTION_API_KEY) and restart the bot."
)
HEARD_MAX_CHARS = 200


def heard(transcript: str) -> str:
    line = " ".join(transcript.split())
    if len(line) > HEARD_MAX_CHARS:
        line = line[: HEARD_MAX_CHARS - 1] + "…"
    return f"🎤 {line}"


class Intake:
    def __init__(
        self,
        client: MatrixClient,
        *,
        notify: Callable[[str, str], None],
        transcriber: Transcriber | None,
        text_file_max_chars: int,
    ) -> None:
        self._client = client
        self._notify = notify
        self._transcriber = transcriber
        self._max_chars = text_file_max_chars

    async def prepare(self, base: InboundMessage, content: JSON) -> InboundMessage | None:
        """``base`` with the event's file attached (or its transcript as the text), or
        None after telling the person why not."""
        room = base.conversation_id
        try:
            return await self._prepare(base, content)
        except MediaRejectedError as rejected:
            log.info("matrix_media_refused", room=room, reason=rejected.notice)
            self._notify(room, rejected.notice)
            return None

    async def _prepare(self, base: InboundMessage, content: JSON) -> InboundMessage:
        msgtype = text_field(content, "msgtype")
        info = content.get("info")
        info = info if isinstance(info, dict) else {}
        mime = info.get("mimetype") if isinstance(info.get("mimetype"), str) else None
        filename, body = text_field(content, "filename"), text_field(content, "body")
        name = filename or body or "file"
        caption = body if filename and body != filename else ""  # Matrix 1.10 captions
        sealed = content.get("file")
        file = sealed if isinstance(sealed, dict) and "url" not in content else None
        try:
            url = content_uri(file) if file is not None else text_field(content, "url")
        except AttachmentError as exc:
            log.warning("matrix_encrypted_file_unreadable", reason=exc.reason)
            raise MediaRejectedError(UNREADABLE_FILE) from None
        if msgtype == "m.audio":
            text = await self._transcribe(base.conversation_id, url, name, mime, file)
            return replace(base, text="\n\n".join(t for t in (caption, text) if t))
        if msgtype == "m.file" and not might_read(name, mime):
            raise MediaRejectedError(not_understood(name))
        size = info.get("size")
        if isinstance(size, int) and size > DOWNLOAD_LIMIT:
            raise MediaRejectedError(TOO_BIG)
        data = await self._download(url, file)
        origin = f"matrix:{url}"
        claims_image = (mime or "").lower().startswith("image/")
        if msgtype == "m.image" or (claims_image and not is_svg(name, mime, data)):
            image = await prepare_image(data)
            attachment = Attachment("image", image.media_type, image.data, name, origin)
        else:
            document = await read_document_off_loop(name, mime, data, max_chars=self._max_chars)
            attachment = Attachment(document.kind, document.media_type, document.data, name, origin)
        return replace(base, text=caption, attachments=(*base.attachments, attachment))

    async def _download(self, url: str, file: JSON | None = None) -> bytes:
        """The file at ``url``; decrypted, when ``file`` is its ``EncryptedFile``."""
        try:
            data = await self._client.download(url, limit=DOWNLOAD_LIMIT)
        except MatrixError as exc:
            log.warning("matrix_media_download_failed", status=exc.status, errcode=exc.errcode)
            raise MediaRejectedError(TOO_BIG if exc.status == 413 else NOT_DOWNLOADED) from None
        except UnreachableError as exc:
            log.warning("matrix_media_download_failed", reason=exc.reason)
            raise MediaRejectedError(NOT_DOWNLOADED) from None
        if file is None:
            return data
        try:
            return decrypt(data, file)
        except AttachmentError as exc:
            log.warning("matrix_encrypted_file_unreadable", reason=exc.reason)
            raise MediaRejectedError(UNREADABLE_FILE) from None

    async def _transcribe(
        self, room: str, url: str, name: str, mime: str | None, file: JSON | None
    ) -> str:
        if self._transcriber is None:
            raise MediaRejectedError(NO_TRANSCRIPTION)
        data = await self._download(url, file)
        filename = name if "." in name and not name.lower().endswith(".oga") else "voice.ogg"
        try:
            text = await self._transcriber.transcribe(
                data, filename=filename, media_type=mime or "audio/ogg"
            )
        except TranscriptionError as exc:
            raise MediaRejectedError(exc.user_message) from exc
        self._notify(room, heard(text))
        return text
