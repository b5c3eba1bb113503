"""Files in (``m.image``, ``m.file`` and ``m.audio``) for the kit's intake, fetched
through the homeserver's authenticated media API and decrypted when the room is
encrypted. A file's handle is its content URI, or, for an encrypted file, the whole
``EncryptedFile`` (key and hash with it: it is never logged).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import structlog

from thalos_bot.channels.intake.files import FileKind, RemoteFile, WithFiles
from thalos_bot.channels.ports import InboundMessage
from thalos_bot.media.limits import MediaRejectedError
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
VOICE_FLAG = "org.matrix.msc3245.voice"
"""Marks an ``m.audio`` as a voice message (Element's)."""


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
    sealed = content.get("file")
    try:
        if isinstance(sealed, dict) and "url" not in content:
            url = content_uri(sealed)
            ref = json.dumps(sealed)
        else:
            ref = url = text_field(content, "url")
    except AttachmentError as exc:
        log.warning("matrix_encrypted_file_unreadable", reason=exc.reason)
        raise MediaRejectedError(UNREADABLE_FILE) from None
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


class MatrixFiles:
    """The kit's file source: a file from the homeserver, decrypted when sealed."""

    def __init__(self, client: MatrixClient) -> None:
        self._client = client

    async def fetch(self, file: RemoteFile) -> bytes:
        if file.size is not None and file.size > DOWNLOAD_LIMIT:
            raise MediaRejectedError(TOO_BIG)
        sealed: dict[str, Any] | None = None
        url = file.ref
        if not file.ref.startswith("mxc://"):
            sealed = json.loads(file.ref)
            url = content_uri(sealed)
        try:
            data = await self._client.download(url, limit=DOWNLOAD_LIMIT)
        except MatrixError as exc:
            log.warning("matrix_media_download_failed", status=exc.status, errcode=exc.errcode)
            raise MediaRejectedError(TOO_BIG if exc.status == 413 else NOT_DOWNLOADED) from None
        except UnreachableError as exc:
            log.warning("matrix_media_download_failed", reason=exc.reason)
            raise MediaRejectedError(NOT_DOWNLOADED) from None
        if sealed is None:
            return data
        try:
            return decrypt(data, sealed)
        except AttachmentError as exc:
            log.warning("matrix_encrypted_file_unreadable", reason=exc.reason)
            raise MediaRejectedError(UNREADABLE_FILE) from None
