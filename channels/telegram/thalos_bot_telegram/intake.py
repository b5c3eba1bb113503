"""Telegram's files for the kit's intake (:mod:`thalos_bot.channels.intake.files`):
fetched through ``getFile`` and the file endpoint of the configured server, within the
20 MB a bot may download, with Telegram's wording when that fails."""

from __future__ import annotations

from dataclasses import dataclass

import structlog
from telegram import Bot
from telegram.error import BadRequest, TelegramError

from thalos_bot.channels.intake.downloads import DownloadError, FileDownloads
from thalos_bot.channels.intake.files import RemoteFile
from thalos_bot.media.limits import TELEGRAM_DOWNLOAD_LIMIT, MediaRejectedError

log = structlog.get_logger(__name__)

TOO_BIG = (
    "That file is larger than 20 MB, the most a Telegram bot can download. "
    "Send a smaller one (or a link)."
)
NOT_DOWNLOADED = "That file could not be downloaded from Telegram. Try sending it again."


@dataclass(frozen=True, slots=True)
class TelegramFiles:
    """The intake's :class:`~thalos_bot.channels.intake.files.FileSource`."""

    _bot: Bot
    _downloads: FileDownloads

    async def fetch(self, file: RemoteFile) -> bytes | bytearray:
        if file.size is not None and file.size > TELEGRAM_DOWNLOAD_LIMIT:
            raise MediaRejectedError(TOO_BIG)
        try:
            remote = await self._bot.get_file(file.ref)
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
