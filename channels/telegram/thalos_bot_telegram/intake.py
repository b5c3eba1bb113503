"""Messages with files: downloaded, checked and converted before the pump sees them.

A photo, an image or a PDF sent as a file, a text file and a voice note are fetched
through ``getFile`` and the file endpoint of the configured server, checked against the
limits (Telegram's 20 MB download limit, the model's media types and sizes), converted
where needed, and handed over as one :class:`InboundMessage` with attachments. An album
(one ``media_group_id``) arrives as separate messages and is handed over as one, once
no part has come for ``album_settle`` seconds. When anything is over a limit the person
gets a notice that names it, and nothing of that message is sent.

Nothing here decodes on the event loop: images, PDFs and text files are checked in
worker threads, a few at a time for the whole process (:mod:`thalos_bot.media.work`).
An SVG is a text file (its source), whatever ``image/*`` type it claims.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import anyio
import structlog
from anyio.abc import TaskGroup
from telegram import Bot, Message
from telegram.error import BadRequest, TelegramError

from thalos_bot.channels.ports import InboundMessage
from thalos_bot.domain.attachments import Attachment, Inbound
from thalos_bot.domain.ids import ConversationId
from thalos_bot.media.documents import (
    is_svg,
    might_read,
    not_understood,
    read_document_off_loop,
)
from thalos_bot.media.images import prepare_image
from thalos_bot.media.limits import TELEGRAM_DOWNLOAD_LIMIT, MediaRejectedError
from thalos_bot.media.transcription import Transcriber, TranscriptionError
from thalos_bot_telegram.attachments import TelegramFile, file_of
from thalos_bot_telegram.downloads import DownloadError, FileDownloads
from thalos_bot_telegram.guard import Notify, failed, tell

log = structlog.get_logger(__name__)

TOO_BIG = (
    "That file is larger than 20 MB, the most a Telegram bot can download. "
    "Send a smaller one (or a link)."
)
NOT_DOWNLOADED = "That file could not be downloaded from Telegram. Try sending it again."
NO_TRANSCRIPTION = (
    "Voice notes need a transcription service: add a [transcription] section to bot.toml "
    "(base_url and model of an OpenAI-compatible /audio/transcriptions endpoint, the key "
    "in THALOS_TRANSCRIPTION_API_KEY) and restart the bot."
)
HEARD_MAX_CHARS = 200


def heard(transcript: str) -> str:
    """The one short line that shows what was heard."""
    line = " ".join(transcript.split())
    if len(line) > HEARD_MAX_CHARS:
        line = line[: HEARD_MAX_CHARS - 1] + "…"
    return f"🎤 {line}"


@dataclass(frozen=True, slots=True)
class MediaMessage:
    """An admitted message with a file: ``base`` has its caption as text."""

    base: InboundMessage
    message: Message

    @property
    def group(self) -> str | None:
        group: object = self.message.media_group_id
        return group if isinstance(group, str) and group else None


@dataclass(slots=True)
class _Slot:
    """A message's place in its chat's order: handed over once every earlier one was."""

    message: InboundMessage | None = None
    done: bool = False


@dataclass(slots=True)
class _Album:
    parts: list[MediaMessage]
    slot: _Slot
    arrived: anyio.Event = field(default_factory=anyio.Event)


class Intake:
    def __init__(
        self,
        bot: Bot,
        *,
        group: TaskGroup,
        hand_over: Callable[[InboundMessage], None],
        notify: Notify,
        transcriber: Transcriber | None,
        album_settle: float,
        text_file_max_chars: int,
        downloads: FileDownloads,
    ) -> None:
        self._bot = bot
        self._downloads = downloads
        self._group = group
        self._hand_over = hand_over
        self._notify = notify
        self._transcriber = transcriber
        self._settle = album_settle
        self._max_chars = text_file_max_chars
        self._albums: dict[tuple[ConversationId, str], _Album] = {}
        self._order: dict[ConversationId, deque[_Slot]] = {}

    def pass_text(self, message: InboundMessage) -> None:
        """Hand over a message without files, after the chat's files still in work (a
        photo and then "what is this?" reach the model in that order)."""
        waiting = self._order.get(message.conversation_id)
        if waiting:
            waiting.append(_Slot(message, done=True))
        else:
            self._hand_over(message)

    def take(self, item: MediaMessage) -> None:
        """Start handling ``item`` (returns at once; the work runs in the task group)."""
        conversation = item.base.conversation_id
        group = item.group
        if group is None:
            self._group.start_soon(self._handle, [item], self._reserve(conversation))
            return
        key = (conversation, group)
        album = self._albums.get(key)
        if album is None:
            self._albums[key] = _Album([item], self._reserve(conversation))
            self._group.start_soon(self._settle_album, key)
        else:
            album.parts.append(item)
            album.arrived.set()

    async def _settle_album(self, key: tuple[ConversationId, str]) -> None:
        album = self._albums[key]
        while True:
            with anyio.move_on_after(self._settle) as quiet:
                await album.arrived.wait()
            if quiet.cancelled_caught:
                break
            album.arrived = anyio.Event()
        del self._albums[key]
        parts = sorted(album.parts, key=lambda p: p.message.message_id)
        await self._handle(parts, album.slot)

    def _reserve(self, conversation: ConversationId) -> _Slot:
        slot = _Slot()
        self._order.setdefault(conversation, deque()).append(slot)
        return slot

    def _complete(self, conversation: ConversationId, slot: _Slot) -> None:
        slot.done = True
        waiting = self._order[conversation]
        while waiting and waiting[0].done:
            head = waiting.popleft()
            if head.message is not None:
                self._hand_over(head.message)
        if not waiting:
            del self._order[conversation]

    async def _handle(self, parts: Sequence[MediaMessage], slot: _Slot) -> None:
        conversation = parts[0].base.conversation_id
        try:
            slot.message = await self._prepare(parts)
        except Exception as exc:  # noqa: BLE001 - one bad file must not stop the channel
            # A bug, not a refusal (those are MediaRejectedError): see guard.
            failed(exc, conversation=conversation, notify=self._notify, kind="file")
        finally:
            self._complete(conversation, slot)

    async def _prepare(self, parts: Sequence[MediaMessage]) -> InboundMessage | None:
        base = parts[0].base
        conversation = base.conversation_id
        captions = [p.base.text for p in parts if p.base.text.strip()]
        attachments: list[Inbound] = []
        try:
            for part in parts:
                file = file_of(part.message)
                if file is None:
                    continue
                if file.kind in {"voice", "audio"}:
                    captions.append(await self._transcribe(conversation, file))
                else:
                    attachments.append(await self._attachment(file))
        except MediaRejectedError as rejected:
            log.info("telegram_media_refused", chat=conversation, reason=rejected.notice)
            tell(self._notify, conversation, rejected.notice)
            return None
        for part in parts:
            attachments.extend(a for a in part.base.attachments if a not in attachments)
        return dataclasses.replace(base, text="\n\n".join(captions), attachments=tuple(attachments))

    async def _download(self, file: TelegramFile) -> bytes | bytearray:
        if file.size is not None and file.size > TELEGRAM_DOWNLOAD_LIMIT:
            raise MediaRejectedError(TOO_BIG)
        try:
            remote = await self._bot.get_file(file.file_id)
            url = remote.file_path or ""
            data: bytes | bytearray
            if url.startswith(("http://", "https://")):
                data = await self._downloads.fetch(url)
            else:  # a path on this machine (a local Bot API server): python-telegram-bot
                data = bytes(await remote.download_as_bytearray())
        except DownloadError as exc:
            log.warning("telegram_file_download_failed", kind=file.kind, error=exc.reason)
            raise MediaRejectedError(TOO_BIG if exc.too_big else NOT_DOWNLOADED) from None
        except BadRequest as exc:
            too_big = "too big" in exc.message.lower()
            log.warning("telegram_file_refused", kind=file.kind, too_big=too_big)
            raise MediaRejectedError(TOO_BIG if too_big else NOT_DOWNLOADED) from exc
        except TelegramError as exc:
            log.warning("telegram_file_download_failed", kind=file.kind, error=type(exc).__name__)
            raise MediaRejectedError(NOT_DOWNLOADED) from exc
        if len(data) > TELEGRAM_DOWNLOAD_LIMIT:
            raise MediaRejectedError(TOO_BIG)
        return data

    async def _attachment(self, file: TelegramFile) -> Attachment:
        if file.kind == "document" and not might_read(file.name, file.mime_type):
            # Refused before downloading it: by what it claims, it cannot be read.
            raise MediaRejectedError(not_understood(file.name))
        data = await self._download(file)
        claims_image = (file.mime_type or "").lower().startswith("image/")
        if file.kind == "photo" or (claims_image and not is_svg(file.name, file.mime_type, data)):
            image = await prepare_image(data)
            return Attachment("image", image.media_type, image.data, file.name, file.origin)
        # Worker threads: a 20 MB log or a PDF with a broken xref takes seconds to check.
        document = await read_document_off_loop(
            file.name, file.mime_type, data, max_chars=self._max_chars
        )
        return Attachment(document.kind, document.media_type, document.data, file.name, file.origin)

    async def _transcribe(self, conversation: ConversationId, file: TelegramFile) -> str:
        if self._transcriber is None:
            raise MediaRejectedError(NO_TRANSCRIPTION)
        data = await self._download(file)
        try:
            text = await self._transcriber.transcribe(
                bytes(data), filename=_upload_name(file), media_type=file.mime_type or "audio/ogg"
            )
        except TranscriptionError as exc:
            raise MediaRejectedError(exc.user_message) from exc
        tell(self._notify, conversation, heard(text))
        return text


def _upload_name(file: TelegramFile) -> str:
    """A name whose extension the endpoint accepts (``.oga`` is refused by some)."""
    if file.kind == "voice" or not file.name or "." not in file.name:
        return "voice.ogg"
    if file.name.lower().endswith(".oga"):
        return file.name[:-4] + ".ogg"
    return file.name
