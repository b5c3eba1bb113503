"""Files fetched from Telegram's file endpoint: the kit's chunked downloads
(:mod:`thalos_bot.channels.intake.downloads`) at the 20 MB a bot may download."""

from __future__ import annotations

from thalos_bot.channels.intake.downloads import DownloadError
from thalos_bot.channels.intake.downloads import FileDownloads as _FileDownloads
from thalos_bot.media.limits import TELEGRAM_DOWNLOAD_LIMIT

__all__ = ["DownloadError", "FileDownloads"]


class FileDownloads(_FileDownloads):
    def __init__(self, timeout: float, *, limit: int = TELEGRAM_DOWNLOAD_LIMIT) -> None:
        super().__init__(timeout, limit=limit)
