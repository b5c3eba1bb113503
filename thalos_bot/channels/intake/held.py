"""A file source for files a message brings with it (an email's attachments, the web
page's uploads): the bytes are here already, held under a ref until the kit's
:class:`~thalos_bot.channels.intake.files.Intake` fetches them, and refused there, with
a notice that says so, when over the transport's limit. A message refused part-way
leaves its other files unfetched; only the latest :data:`HELD` are kept."""

from __future__ import annotations

import secrets
from collections import OrderedDict

from thalos_bot.channels.intake.files import RemoteFile
from thalos_bot.media.limits import MediaRejectedError

HELD = 64
GONE = "That file is gone; send it again."


class HeldFiles:
    """``too_big``: the notice for a file over ``limit`` bytes, formatted with the
    file's ``name`` and the limit in ``mb``."""

    def __init__(self, limit: int, too_big: str) -> None:
        self.limit = limit
        self._too_big = too_big
        self._held: OrderedDict[str, bytes] = OrderedDict()

    def hold(self, data: bytes, name: str, mime: str | None, origin: str) -> RemoteFile:
        """Hold ``data``; the file to hand the intake. Audio is transcribed, anything
        else checked and converted by what it is (an image's type included)."""
        ref = secrets.token_urlsafe(12)
        self._held[ref] = data
        while len(self._held) > HELD:
            self._held.popitem(last=False)
        audio = (mime or "").lower().startswith("audio/")
        return RemoteFile("audio" if audio else "document", ref, origin, len(data), name, mime)

    async def fetch(self, file: RemoteFile) -> bytes:
        data = self._held.pop(file.ref, None)
        if data is None:
            raise MediaRejectedError(GONE)
        if len(data) > self.limit:
            mb = self.limit / (1024 * 1024)
            raise MediaRejectedError(self._too_big.format(name=file.name, mb=f"{mb:g}"))
        return data
