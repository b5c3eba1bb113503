"""Messages with files: fetched, checked and converted before the pump sees them.

A transport decodes a message with files into :class:`WithFiles` (the message, with its
caption as text, and a :class:`RemoteFile` for each file) and fetches a file's bytes
through its :class:`FileSource` (Telegram: ``getFile`` and the file endpoint, within the
20 MB a bot may download). The rest is shared: each file is checked against the
model's media types and sizes, converted where needed (an image prepared, a document
read, a voice note transcribed), and the whole is handed over as one
:class:`~thalos_bot.channels.ports.InboundMessage` with attachments. An album (one
``group``) arrives as separate messages and is handed over as one, once no part has
come for ``album_settle`` seconds. When anything is over a limit the person gets a
notice that names it (a :class:`~thalos_bot.media.limits.MediaRejectedError`'s), and
nothing of that message is sent: it is finished (its ``handled`` is set). Messages keep
their order in a conversation: a text sent after a photo waits for it.

Nothing here decodes on the event loop: images, PDFs and text files are checked in
worker threads, a few at a time for the whole process (:mod:`thalos_bot.media.work`).
An SVG is a text file (its source), whatever ``image/*`` type it claims.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import anyio
import structlog
from anyio.abc import TaskGroup

from thalos_bot.channels.admission.guard import Notify, UpdateGuard
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
from thalos_bot.media.limits import MediaRejectedError
from thalos_bot.media.transcription import Transcriber, TranscriptionError

log = structlog.get_logger(__name__)

NO_TRANSCRIPTION = (
    "Voice notes need a transcription service: add a [transcription] section to bot.toml "
    "(base_url and model of an OpenAI-compatible /audio/transcriptions endpoint, the key "
    "in THALOS_TRANSCRIPTION_API_KEY) and restart the bot."
)
HEARD_MAX_CHARS = 200

FileKind = Literal["photo", "document", "voice", "audio"]


@dataclass(frozen=True, slots=True)
class RemoteFile:
    """A file a message carries, before it is fetched."""

    kind: FileKind
    ref: str
    """The platform's handle to fetch it by (Telegram: the ``file_id``)."""
    origin: str
    """Its key in the media store (``<channel>:<stable id>``), so that a later reply to
    the message can ask for it again without fetching it."""
    size: int | None
    """The size the platform claims, if it says."""
    name: str = ""
    mime_type: str | None = None

    @classmethod
    def claimed(
        cls, ref: str, origin: str, name: str, *, size: object, mime: object, voice: bool = False
    ) -> RemoteFile:
        """A file as a platform's event describes it, each claim taken only when of its
        type (a size that is no integer, a type that is no text: unknown); a voice note
        (``voice``) or ``audio/*`` is transcribed, anything else read as a document."""
        media = mime.split(";")[0].strip() or None if isinstance(mime, str) else None
        audio = (media or "").lower().startswith("audio/")
        kind: FileKind = "voice" if voice else "audio" if audio else "document"
        number = size if isinstance(size, int) and not isinstance(size, bool) else None
        return cls(kind, ref, origin, number, name, media)


@dataclass(frozen=True, slots=True)
class FetchLimit:
    """The most a transport fetches of one file, and what the person is told of a file
    it cannot fetch: over the limit, or not downloaded."""

    most: int
    """Bytes (the notice says it in MB)."""
    source: str
    """Where the files come from, as the person knows it (``Discord``, ``the
    homeserver``)."""
    ours: bool = True
    """False: the platform's own limit, said as such (Telegram lets a bot download
    20 MB at most), so the person knows no setting of the bot's lifts it."""

    @property
    def too_big(self) -> str:
        mb = f"{self.most / (1024 * 1024):g}"
        most = (
            f"the most I take from {self.source}"
            if self.ours
            else f"the most a bot can download from {self.source}"
        )
        return f"That file is larger than {mb} MB, {most}. Send a smaller one (or a link)."

    @property
    def not_downloaded(self) -> str:
        return f"That file could not be downloaded from {self.source}. Try sending it again."

    def claim(self, file: RemoteFile) -> None:
        """Refuse a file whose claimed size is over the limit, before fetching it."""
        if file.size is not None and file.size > self.most:
            raise MediaRejectedError(self.too_big)

    def refusal(self, *, too_big: bool) -> MediaRejectedError:
        """What a fetch that failed raises (``too_big``: it failed for its size)."""
        return MediaRejectedError(self.too_big if too_big else self.not_downloaded)


class FileSource(Protocol):
    """The transport's fetch of a file's bytes; raises
    :class:`~thalos_bot.media.limits.MediaRejectedError` with the notice to show when it
    cannot (too big for the platform, not downloadable)."""

    async def fetch(self, file: RemoteFile) -> bytes | bytearray: ...


@dataclass(frozen=True, slots=True)
class WithFiles:
    """An admitted message with files: ``base`` has its caption as text."""

    base: InboundMessage
    files: tuple[RemoteFile, ...]
    group: str | None = None
    """The album it belongs to, if any."""
    order: int = 0
    """Its place in its album (Telegram: the message id)."""


def heard(transcript: str) -> str:
    """The one short line that shows what was heard."""
    line = " ".join(transcript.split())
    if len(line) > HEARD_MAX_CHARS:
        line = line[: HEARD_MAX_CHARS - 1] + "…"
    return f"🎤 {line}"


@dataclass(slots=True)
class _Slot:
    """A message's place in its chat's order: handed over once every earlier one was."""

    message: InboundMessage | None = None
    done: bool = False


@dataclass(slots=True)
class _Album:
    parts: list[WithFiles]
    slot: _Slot
    arrived: anyio.Event = field(default_factory=anyio.Event)


@dataclass(frozen=True, slots=True)
class IntakeSettings:
    album_settle: float
    text_file_max_chars: int


class Intake:
    def __init__(
        self,
        files: FileSource,
        *,
        group: TaskGroup,
        hand_over: Callable[[InboundMessage], None],
        notify: Notify,
        transcriber: Transcriber | None,
        settings: IntakeSettings,
        guard: UpdateGuard,
        channel: str,
        taken: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """``taken``: until the reader of what is handed over took all of it (the
        inlet's :meth:`~thalos_bot.channels.inlet.Inlet.all_taken`), for
        :meth:`settled`."""
        self._files = files
        self._group = group
        self._hand_over = hand_over
        self._notify = notify
        self._transcriber = transcriber
        self._settle = settings.album_settle
        self._max_chars = settings.text_file_max_chars
        self._guard = guard
        self._refused = f"{channel}_media_refused"
        self._albums: dict[tuple[ConversationId, str], _Album] = {}
        self._order: dict[ConversationId, deque[_Slot]] = {}
        self._settled = anyio.Event()
        self._settled.set()
        self._taken = taken

    def pass_text(self, message: InboundMessage) -> None:
        """Hand over a message without files, after the chat's files still in work (a
        photo and then "what is this?" reach the model in that order)."""
        waiting = self._order.get(message.conversation_id)
        if waiting:
            waiting.append(_Slot(message, done=True))
        else:
            self._hand_over(message)

    def receive(self, message: InboundMessage, files: tuple[RemoteFile, ...] = ()) -> None:
        """:meth:`take` the message with its files, or :meth:`pass_text` without any."""
        if files:
            self.take(WithFiles(message, files))
        else:
            self.pass_text(message)

    def take(self, item: WithFiles) -> None:
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
        parts = sorted(album.parts, key=lambda p: p.order)
        await self._handle(parts, album.slot)

    async def settled(self) -> None:
        """Until every message taken so far is handed over (or refused), and taken by
        the pump: a transport that keeps its place in the platform's stream moves it on
        only after that, so a restart meanwhile (or a stop before the pump read them)
        fetches them again instead of losing them."""
        await self._settled.wait()
        if self._taken is not None:
            await self._taken()

    def _reserve(self, conversation: ConversationId) -> _Slot:
        if self._settled.is_set():
            self._settled = anyio.Event()
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
            if not self._order:
                self._settled.set()

    async def _handle(self, parts: Sequence[WithFiles], slot: _Slot) -> None:
        conversation = parts[0].base.conversation_id
        try:
            slot.message = await self._prepare(parts)
        except Exception as exc:  # noqa: BLE001 - one bad file must not stop the channel
            # A bug, not a refusal (those are MediaRejectedError): see the guard.
            self._guard.failed(exc, conversation=conversation, notify=self._notify, kind="file")
        finally:
            if slot.message is None:  # refused (or failed), its notice sent: it is finished
                for part in parts:
                    if part.base.handled is not None:
                        part.base.handled.set()
            self._complete(conversation, slot)

    async def _prepare(self, parts: Sequence[WithFiles]) -> InboundMessage | None:
        base = parts[0].base
        conversation = base.conversation_id
        captions = [p.base.text for p in parts if p.base.text.strip()]
        attachments: list[Inbound] = []
        try:
            for part in parts:
                for file in part.files:
                    if file.kind in {"voice", "audio"}:
                        captions.append(await self._transcribe(conversation, file))
                    else:
                        attachments.append(await self._attachment(file))
        except MediaRejectedError as rejected:
            log.info(self._refused, chat=conversation, reason=rejected.notice)
            self._guard.tell(self._notify, conversation, rejected.notice)
            return None
        for part in parts:
            attachments.extend(a for a in part.base.attachments if a not in attachments)
        spoken = any(f.kind in {"voice", "audio"} for part in parts for f in part.files)
        return dataclasses.replace(
            base,
            text="\n\n".join(captions),
            attachments=tuple(attachments),
            voice=base.voice or spoken,
        )

    async def _attachment(self, file: RemoteFile) -> Attachment:
        claims_image = (file.mime_type or "").lower().startswith("image/")
        if (
            file.kind == "document"
            and not claims_image
            and not might_read(file.name, file.mime_type)
        ):
            # Refused before fetching it: by what it claims, it cannot be read.
            raise MediaRejectedError(not_understood(file.name))
        data = await self._files.fetch(file)
        if file.kind == "photo" or (claims_image and not is_svg(file.name, file.mime_type, data)):
            image = await prepare_image(data)
            return Attachment("image", image.media_type, image.data, file.name, file.origin)
        # Worker threads: a 20 MB log or a PDF with a broken xref takes seconds to check.
        document = await read_document_off_loop(
            file.name, file.mime_type, data, max_chars=self._max_chars
        )
        return Attachment(document.kind, document.media_type, document.data, file.name, file.origin)

    async def _transcribe(self, conversation: ConversationId, file: RemoteFile) -> str:
        if self._transcriber is None:
            raise MediaRejectedError(NO_TRANSCRIPTION)
        data = await self._files.fetch(file)
        try:
            text = await self._transcriber.transcribe(
                bytes(data), filename=_upload_name(file), media_type=file.mime_type or "audio/ogg"
            )
        except TranscriptionError as exc:
            raise MediaRejectedError(exc.user_message) from exc
        self._guard.tell(self._notify, conversation, heard(text))
        return text


def _upload_name(file: RemoteFile) -> str:
    """A name whose extension the endpoint accepts (``.oga`` is refused by some)."""
    if file.kind == "voice" or not file.name or "." not in file.name:
        return "voice.ogg"
    if file.name.lower().endswith(".oga"):
        return file.name[:-4] + ".ogg"
    return file.name
