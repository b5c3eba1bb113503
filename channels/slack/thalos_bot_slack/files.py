"""Files in: what the kit's intake fetches from Slack.

A file a person shares is downloaded from its ``url_private_download`` with the bot
token (``files:read``); the kit's intake does the rest. Slack answers a download
without a valid token with its HTML sign-in page and status 200, so a ``text/html``
answer to a file that is not HTML counts as refused.

The bot token goes only to Slack's own file host (``files.slack.com`` over https, or the
host of ``base_url`` when one is set): a file object naming another host (an external
file kept on Google Drive, or a forged event) is not fetched, and the person is told.
No redirect is followed (the token would go with it).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import structlog

from thalos_bot.channels.intake.downloads import DownloadError, FileDownloads
from thalos_bot.channels.intake.files import RemoteFile
from thalos_bot.media.limits import MediaRejectedError
from thalos_bot_slack.config import SlackConfig

log = structlog.get_logger(__name__)

SLACK_FILES = "https://files.slack.com"
DOWNLOAD_LIMIT = 20 * 1024 * 1024
TOO_BIG = "That file is too big for me to read (the limit is 20 MB)."
NOT_DOWNLOADED = "I could not download that file from Slack; please send it again."


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


class SlackFiles:
    """The kit's file source: a file's bytes from Slack's file host (or ``base_url``'s,
    a stand-in for Slack), with the bot token."""

    def __init__(self, bot_token: str, config: SlackConfig) -> None:
        self._auth = {"Authorization": f"Bearer {bot_token}"}
        self._origin = _origin(config.base_url or SLACK_FILES)
        self._downloads = FileDownloads(config.request_timeout * 4, limit=DOWNLOAD_LIMIT)

    async def fetch(self, file: RemoteFile) -> bytes | bytearray:
        if file.size is not None and file.size > DOWNLOAD_LIMIT:
            raise MediaRejectedError(TOO_BIG)
        if _origin(file.ref) != self._origin:
            # Never the token to a host that is not Slack's; the host alone is logged.
            host = urlsplit(file.ref).hostname
            log.warning("slack_file_elsewhere", host=host or "", file=file.origin)
            raise MediaRejectedError(NOT_DOWNLOADED)
        html = (file.mime_type or "").startswith("text/html")
        try:
            return await self._downloads.fetch(file.ref, headers=self._auth, html=html)
        except DownloadError as exc:
            log.warning("slack_file_refused", reason=exc.reason)
            raise MediaRejectedError(TOO_BIG if exc.too_big else NOT_DOWNLOADED) from None

    async def aclose(self) -> None:
        await self._downloads.aclose()
