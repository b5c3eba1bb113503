"""Attachments fetched over HTTP in chunks, into one buffer, within a size limit.

Reading a whole response and joining it in one call on the event loop takes, for a
20 MB file, tens of milliseconds during which no chat is served (python-telegram-bot's
downloads do). Here each chunk is appended as it arrives (a short copy each time), and
the size is checked while reading, so a server that sends more than the transport's
download limit is cut off rather than held in memory. A file's URL may hold a token
(Telegram's does), and a request may carry a token in its headers (Slack's does): neither
is ever logged, and no error text carries them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Self

import anyio.lowlevel
import httpx


class DownloadError(Exception):
    """The file could not be fetched; ``reason`` is safe to log (no URL, no token)."""

    def __init__(self, reason: str, *, too_big: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.too_big = too_big


class FileDownloads:
    """One HTTP client for every file download of the channel; close it with
    :meth:`aclose` (or use it as an async context manager)."""

    def __init__(self, timeout: float, *, limit: int) -> None:
        self._client = httpx.AsyncClient(timeout=timeout, follow_redirects=False)
        self._limit = limit

    async def fetch(
        self, url: str, *, headers: Mapping[str, str] | None = None, html: bool = True
    ) -> bytearray:
        """The bytes at ``url``, or :class:`DownloadError`. The buffer itself: a copy of
        20 MB holds the GIL for milliseconds (the checks read it in a worker thread and
        copy only what they keep). ``html=False``: an HTML page is not the file (a host
        that answers a refused download with its sign-in page and a 200)."""
        buffer = bytearray()
        try:
            async with self._client.stream("GET", url, headers=headers) as response:
                if response.status_code != httpx.codes.OK:
                    too_big = response.status_code == httpx.codes.REQUEST_ENTITY_TOO_LARGE
                    raise DownloadError(f"HTTP {response.status_code}", too_big=too_big)
                kind = response.headers.get("content-type", "").split(";")[0].strip()
                if not html and kind.lower() == "text/html":
                    raise DownloadError("an HTML page instead of the file")
                async for chunk in response.aiter_bytes():
                    buffer += chunk
                    if len(buffer) > self._limit:
                        raise DownloadError("over the download limit", too_big=True)
                    # Data already buffered is read without waiting: let others run.
                    await anyio.lowlevel.checkpoint()
        except httpx.HTTPError as exc:
            raise DownloadError(type(exc).__name__) from None
        return buffer

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
