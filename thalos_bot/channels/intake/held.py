"""A file source for files a message brings with it (an email's attachments, the web
page's uploads): the bytes are here already, held under a ref until the kit's
:class:`~thalos_bot.channels.intake.files.Intake` fetches them, and refused there, with
a notice that says so, when over the transport's limit (such a file's bytes are not
kept, only that it was too big).

No file is let go before its message is done with: a fetched one leaves at once, and
the others of a message refused part-way when the transport :meth:`~HeldFiles.release`
them, once the message is finished. What is held is bounded by backpressure: the
transport awaits :meth:`~HeldFiles.room` before it holds a message's files, and refuses
up front a message with more than :data:`HELD`."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Sequence

import anyio
import structlog

from thalos_bot.channels.intake.files import RemoteFile
from thalos_bot.media.limits import MediaRejectedError

log = structlog.get_logger(__name__)

HELD = 64
"""The most files held at once; a message with more is refused whole."""
HELD_BYTES = 256 * 1024 * 1024
"""The most bytes held at once (one message's files are let in when nothing is held)."""
GONE = "That file is gone; send it again."


def too_big_notice(name: str, mb: str) -> str:
    return f"The attachment {name!r} is too big for me to read (the limit is {mb} MB)."


class HeldFiles:
    """``too_big(name, mb)``: the notice for a file over ``limit`` bytes, given the
    file's name and the limit in MB."""

    def __init__(
        self,
        limit: int,
        too_big: Callable[[str, str], str] = too_big_notice,
        *,
        most_bytes: int = HELD_BYTES,
    ) -> None:
        self.limit = limit
        self._too_big = too_big
        self._most_bytes = most_bytes
        self._held: dict[str, bytes | None] = {}
        """By ref: the bytes, or None for a file over the limit."""
        self.bytes = 0
        self._freed = anyio.Event()

    async def room(self, sizes: Sequence[int]) -> None:
        """Until files of ``sizes`` fit beside those held (at once when none is)."""
        kept = sum(size for size in sizes if size <= self.limit)
        while self._held and (
            len(self._held) + len(sizes) > HELD or self.bytes + kept > self._most_bytes
        ):
            log.info("held_files_full", files=len(self._held), bytes=self.bytes)
            await self._freed.wait()

    def hold(self, data: bytes, name: str, mime: str | None, origin: str) -> RemoteFile:
        """Hold ``data``; the file to hand the intake. Audio is transcribed, anything
        else checked and converted by what it is (an image's type included)."""
        ref = secrets.token_urlsafe(12)
        kept = data if len(data) <= self.limit else None
        self._held[ref] = kept
        self.bytes += len(kept or b"")
        audio = (mime or "").lower().startswith("audio/")
        return RemoteFile("audio" if audio else "document", ref, origin, len(data), name, mime)

    def release(self, files: Iterable[RemoteFile]) -> None:
        """Let go of those of ``files`` not fetched (their message is finished)."""
        for file in files:
            self._let_go(file.ref)

    async def release_when(self, handled: anyio.Event, files: Iterable[RemoteFile]) -> None:
        """:meth:`release` ``files`` once their message is ``handled`` (run beside it)."""
        await handled.wait()
        self.release(files)

    async def fetch(self, file: RemoteFile) -> bytes:
        if file.ref not in self._held:
            raise MediaRejectedError(GONE)
        data = self._let_go(file.ref)
        if data is None:
            mb = self.limit / (1024 * 1024)
            raise MediaRejectedError(self._too_big(file.name, f"{mb:g}"))
        return data

    def _let_go(self, ref: str) -> bytes | None:
        if ref not in self._held:
            return None
        data = self._held.pop(ref)
        self.bytes -= len(data or b"")
        self._freed.set()
        self._freed = anyio.Event()
        return data
