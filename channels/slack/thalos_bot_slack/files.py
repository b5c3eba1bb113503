"""Files in and out.

In: a file a person shares is downloaded from its ``url_private_download`` with the bot
token (``files:read``), then checked and prepared like every channel's (images scaled,
PDFs and text read; see :mod:`thalos_bot.media`), and handed to the runtime, which keeps
it in the media store under ``slack:<file id>``. Slack answers a download without a
valid token with its HTML sign-in page and status 200, so a ``text/html`` answer to a
file that is not HTML counts as refused.

Out: an image a tool made goes up with ``files.uploadV2`` (``files.getUploadURLExternal``,
the upload, ``files.completeUploadExternal``) into the conversation's thread.

The bot token goes only to Slack's own file host (``files.slack.com`` over https, or the
host of ``base_url`` when one is set): a file object naming another host (an external
file kept on Google Drive, or a forged event) is not fetched, and the person is told.
A redirect to another host loses the header (aiohttp drops it across origins).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import aiohttp
import structlog

from thalos_bot.domain.attachments import Attachment
from thalos_bot.media.documents import is_svg, might_read, not_understood, read_document_off_loop
from thalos_bot.media.images import prepare_image
from thalos_bot.media.limits import MediaRejectedError
from thalos_bot_slack.inbound import SlackFile

log = structlog.get_logger(__name__)

SLACK_FILES = "https://files.slack.com"
DOWNLOAD_LIMIT = 20 * 1024 * 1024
TOO_BIG = "That file is too big for me to read (the limit is 20 MB)."
NOT_DOWNLOADED = "I could not download that file from Slack; please send it again."


def file_origin(base_url: str | None) -> tuple[str, str]:
    """The (scheme, host[:port]) the bot token may be sent to for a file: Slack's file
    host, or ``base_url``'s host (a stand-in for Slack)."""
    parts = urlsplit(base_url or SLACK_FILES)
    return parts.scheme.lower(), parts.netloc.lower()


class Downloads:
    def __init__(
        self,
        bot_token: str,
        timeout: float,
        text_max_chars: int,
        origin: tuple[str, str],
    ) -> None:
        self._token = bot_token
        self._origin = origin
        self._timeout = aiohttp.ClientTimeout(total=timeout * 4)
        self._session: aiohttp.ClientSession | None = None
        self._max_chars = text_max_chars

    async def fetch(self, file: SlackFile) -> bytes:
        if file.size is not None and file.size > DOWNLOAD_LIMIT:
            raise MediaRejectedError(TOO_BIG)
        parts = urlsplit(file.url)
        if (parts.scheme.lower(), parts.netloc.lower()) != self._origin:
            # Never the token to a host that is not Slack's; the host alone is logged.
            log.warning("slack_file_elsewhere", host=parts.hostname or "", file=file.id)
            raise MediaRejectedError(NOT_DOWNLOADED)
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        headers = {"Authorization": f"Bearer {self._token}"}
        try:
            async with self._session.get(file.url, headers=headers) as response:
                html = response.content_type == "text/html"
                if response.status != 200 or (html and not file.mimetype.startswith("text/html")):
                    log.warning("slack_file_refused", status=response.status, sign_in_page=html)
                    raise MediaRejectedError(NOT_DOWNLOADED)
                data = await response.content.read(DOWNLOAD_LIMIT + 1)
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.warning("slack_file_download_failed", error=type(exc).__name__)
            raise MediaRejectedError(NOT_DOWNLOADED) from exc
        if len(data) > DOWNLOAD_LIMIT:
            raise MediaRejectedError(TOO_BIG)
        return data

    async def attachment(self, file: SlackFile) -> Attachment:
        origin = f"slack:{file.id}"
        claims_image = file.mimetype.lower().startswith("image/")
        if not claims_image and not might_read(file.name, file.mimetype):
            raise MediaRejectedError(not_understood(file.name))
        data = await self.fetch(file)
        if claims_image and not is_svg(file.name, file.mimetype, data):
            image = await prepare_image(data)
            return Attachment("image", image.media_type, image.data, file.name, origin)
        document = await read_document_off_loop(
            file.name, file.mimetype, data, max_chars=self._max_chars
        )
        return Attachment(document.kind, document.media_type, document.data, file.name, origin)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
