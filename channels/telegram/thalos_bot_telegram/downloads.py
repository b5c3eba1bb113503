"""Files fetched from Telegram's file endpoint: the kit's chunked downloads
(:mod:`thalos_bot.channels.intake.downloads`) at the 20 MB a bot may download."""

from __future__ import annotations

from thalos_bot.channels.intake.downloads import DownloadError
from thalos_bot.channels.intake.downloads import FileDownloads as _FileDownloads
from thalos_bot_telegram.limits import LIMITS

__all__ = ["DownloadError", "FileDownloads"]


class FileDownloads(_FileDownloads):
    def __init__(self, timeout: float, *, limit: int = LIMITS.download_bytes) -> None:
        super().__init__(timeout, limit=limit)
