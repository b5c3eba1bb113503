"""Files sent from the page, handed to the kit's intake like any transport's.

The page uploads a message's files with it, so the web's
:class:`~thalos_bot.channels.intake.files.FileSource` has them already: it holds each
upload under a random ref until the kit's
:class:`~thalos_bot.channels.intake.files.Intake` fetches it. Everything after that is
shared with Telegram: the checks against the model's media types and sizes, the
conversion, the transcription of audio, the notices that name a limit, and the order of
a conversation's messages.
"""

from __future__ import annotations

import hashlib
import secrets
from collections import OrderedDict
from dataclasses import dataclass

from thalos_bot.channels.intake.files import RemoteFile
from thalos_bot.media.limits import MediaRejectedError

TOO_BIG = "That file is larger than {limit} MB, the most the web chat takes. Send a smaller one."
TOO_MANY = "That is more than {limit} files in one message. Send fewer at a time."
HELD = 64
"""Uploads held at most; a message refused part-way leaves its other files unfetched,
and the oldest of those are let go."""


@dataclass(frozen=True, slots=True)
class Upload:
    name: str
    media_type: str | None
    data: bytes


class Uploads:
    """The web's file source: the bytes are already here."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._held: OrderedDict[str, bytes] = OrderedDict()

    def hold(self, upload: Upload) -> RemoteFile:
        ref = secrets.token_urlsafe(12)
        self._held[ref] = upload.data
        while len(self._held) > HELD:
            self._held.popitem(last=False)
        audio = (upload.media_type or "").lower().startswith("audio/")
        return RemoteFile(
            "audio" if audio else "document",
            ref,
            f"web:{hashlib.sha256(upload.data).hexdigest()[:32]}",
            len(upload.data),
            upload.name,
            upload.media_type,
        )

    async def fetch(self, file: RemoteFile) -> bytes:
        data = self._held.pop(file.ref, None)
        if data is None:
            raise MediaRejectedError("That file is gone; send it again.")
        if len(data) > self.max_bytes:
            raise MediaRejectedError(TOO_BIG.format(limit=self.max_bytes // (1024 * 1024)))
        return data
