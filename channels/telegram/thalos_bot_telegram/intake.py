"""Telegram's files for the kit's intake (:mod:`thalos_bot.channels.intake.files`):
fetched through ``getFile`` and the file endpoint of the configured server, within the
20 MB a bot may download, with Telegram's wording when that fails."""

from __future__ import annotations

from dataclasses import dataclass

import structlog
from telegram import Bot
from telegram.error import BadRequest, TelegramError

from thalos_bot.channels.intake.downloads import DownloadError, FileDownloads
from thalos_bot.channels.intake.files import FetchLimit, RemoteFile
from thalos_bot.media.limits import TELEGRAM_DOWNLOAD_LIMIT

log = structlog.get_logger(__name__)

LIMIT = FetchLimit(TELEGRAM_DOWNLOAD_LIMIT, "Telegram", ours=False)  # the Bot API's


@dataclass(frozen=True, slots=True)
class TelegramFiles:
    """The intake's :class:`~thalos_bot.channels.intake.files.FileSource`."""

    _bot: Bot
    _downloads: FileDownloads

    async def fetch(self, file: RemoteFile) -> bytes | bytearray:
        LIMIT.claim(file)
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
            raise LIMIT.refusal(too_big=exc.too_big) from None
        except BadRequest as exc:
            too_big = "too big" in exc.message.lower()
            log.warning("telegram_file_refused", kind=file.kind, too_big=too_big)
            raise LIMIT.refusal(too_big=too_big) from exc
        except TelegramError as exc:
            log.warning("telegram_file_download_failed", kind=file.kind, error=type(exc).__name__)
            raise LIMIT.refusal(too_big=False) from exc
        if len(data) > LIMIT.most:
            raise LIMIT.refusal(too_big=True)
        return data
