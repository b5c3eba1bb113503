"""Which timeline events become messages for the pump, and which are ignored.

Direct rooms (joined on an allowed user's invite) are served whole; the rooms listed in
``rooms`` only for messages that mention the bot (``m.mentions.user_ids``, a pill, or
its name in the text) or reply to one of its messages. A sender who is not allowed is
dropped without a word and logged at debug without the text; so are notices (other
bots), edits and the bot's own events. Every accepted sender runs as their person
(:class:`~thalos_bot.channels.people.Seats`), found by their Matrix id among the allowed
ones; nothing else taken from Matrix reaches authorization.

A file (``m.image``, ``m.file``, ``m.audio``) goes to the kit's intake, fetched through
the homeserver's authenticated media API and decrypted when the room is encrypted. Its
handle is its content URI, or, for an encrypted file, the whole ``EncryptedFile`` (key
and hash with it: it is never logged).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import structlog

from thalos_bot.channels import notices
from thalos_bot.channels.intake.downloads import DownloadError, FileDownloads
from thalos_bot.channels.intake.files import FetchLimit, FileKind, RemoteFile, WithFiles
from thalos_bot.channels.people import Seats
from thalos_bot.channels.ports import InboundMessage, Quoted
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.media.limits import MediaRejectedError
from thalos_bot_matrix.attachments import file_ref, opened, url_of
from thalos_bot_matrix.client import MatrixClient, q
from thalos_bot_matrix.events import (
    JSON,
    MEDIA_TYPES,
    TEXT_TYPES,
    VOICE_FLAG,
    content_of,
    mentions,
    relation,
    reply_target,
    strip_reply_fallback,
    text_field,
    without_mention,
)

log = structlog.get_logger(__name__)

LIMIT = FetchLimit(20 * 1024 * 1024, "the homeserver")
"""The most the channel downloads of one file."""

ReplyAuthor = Callable[[str, str], Awaitable[tuple[str, str] | None]]
"""``(room, event id)`` → ``(sender, body)`` of the replied-to event, or None."""


@dataclass(slots=True)
class Admission:
    me: str
    allowed_users: frozenset[str]
    seats: Seats
    rooms: frozenset[str]
    reply_author: ReplyAuthor
    displayname: str | None = None
    quote_max_chars: int = 1500

    async def admit(
        self, room_id: str, sender: str, event: JSON
    ) -> InboundMessage | WithFiles | str | None:
        """An ``m.room.message`` of another ``sender`` than the bot, as the message for
        the pump, with its file to fetch; a ``str`` is what to tell an allowed user whose
        message cannot be taken (a file that cannot even be named, or neither text nor a
        file: a location, a sticker); None: ignored."""
        event_id = event.get("event_id")
        if not isinstance(event_id, str):
            return None
        if sender not in self.allowed_users:
            log.debug("matrix_message_ignored", reason="sender not allowed", room=room_id)
            return None
        content = content_of(event)
        msgtype = text_field(content, "msgtype")
        if msgtype == "m.notice" or relation(content).get("rel_type") == "m.replace":
            return None  # another bot's, or an edit
        target = reply_target(content)
        replied = await self.reply_author(room_id, target) if target is not None else None
        body = strip_reply_fallback(text_field(content, "body"))
        if room_id in self.rooms:
            to_me = replied is not None and replied[0] == self.me
            if not to_me and not mentions(content, self.me, self.displayname):
                return None
            body = without_mention(body, self.me, self.displayname)
        base = InboundMessage(
            ChannelId("matrix"),
            ConversationId(room_id),
            self.seats.sender(sender, sender),
            body.strip() if msgtype in TEXT_TYPES else "",
            _received_at(event),
            reply_to=self._quoted(replied, sender),
            message_ref=event_id,
        )
        if msgtype in TEXT_TYPES:
            return base
        if msgtype not in MEDIA_TYPES:
            return notices.only_text()
        try:
            return with_file(base, content)
        except MediaRejectedError as rejected:
            return rejected.notice

    def _quoted(self, replied: tuple[str, str] | None, sender: str) -> Quoted | None:
        if replied is None:
            return None
        author, text = replied
        return Quoted.capped(
            strip_reply_fallback(text),
            self.quote_max_chars,
            bots=author == self.me,
            senders=author == sender,
        )


def _received_at(event: JSON) -> datetime:
    stamp = event.get("origin_server_ts")
    if isinstance(stamp, int) and not isinstance(stamp, bool):
        return datetime.fromtimestamp(stamp / 1000, UTC)
    return datetime.now(UTC)


def with_file(base: InboundMessage, content: JSON) -> WithFiles:
    """``base`` with the event's caption as its text and its file to fetch; raises
    :class:`MediaRejectedError` when the file cannot even be named."""
    msgtype = text_field(content, "msgtype")
    info = content.get("info")
    info = info if isinstance(info, dict) else {}
    mime = info.get("mimetype") if isinstance(info.get("mimetype"), str) else None
    filename, body = text_field(content, "filename"), text_field(content, "body")
    name = filename or body or "file"
    caption = body if filename and body != filename else ""  # Matrix 1.10 captions
    ref, url = file_ref(content)
    kind: FileKind = "document"
    if msgtype == "m.audio":
        kind = "voice" if VOICE_FLAG in content else "audio"
    elif msgtype == "m.image":
        kind = "photo"
    size = info.get("size")
    file = RemoteFile(
        kind, ref, f"matrix:{url}", size if isinstance(size, int) else None, name, mime
    )
    return WithFiles(replace(base, text=caption), (file,))


def download_url(homeserver: str, mxc: str) -> str:
    """Where the homeserver's authenticated media serves ``mxc`` (``mxc://server/id``)."""
    if not mxc.startswith("mxc://") or mxc.count("/") != 3:
        raise DownloadError("not a content URI")
    server, media = mxc.removeprefix("mxc://").split("/")
    return f"{homeserver}/_matrix/client/v1/media/download/{q(server)}/{q(media)}"


class MatrixFiles:
    """The kit's file source: a file from the homeserver's authenticated media
    (``/_matrix/client/v1/media/download``), through the kit's bounded download, and
    decrypted when sealed. Close it with :meth:`aclose`."""

    def __init__(self, client: MatrixClient, *, limit: FetchLimit = LIMIT) -> None:
        self._client = client
        self._limit = limit
        self._downloads = FileDownloads(client.timeout, limit=limit.most)

    async def fetch(self, file: RemoteFile) -> bytes | bytearray:
        self._limit.claim(file)
        try:
            source = download_url(self._client.homeserver, url_of(file.ref))
            data = await self._downloads.fetch(source, headers=self._client.auth())
        except DownloadError as exc:
            log.warning("matrix_media_download_failed", reason=exc.reason)
            raise self._limit.refusal(too_big=exc.too_big) from None
        return opened(data, file.ref)

    async def aclose(self) -> None:
        await self._downloads.aclose()
