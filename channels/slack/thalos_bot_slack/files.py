"""Files in: what the kit's intake fetches from Slack.

A file a person shares is downloaded from its ``url_private_download`` with the bot
token (``files:read``), then checked and prepared like every channel's (images scaled,
PDFs and text read, audio clips transcribed; see :mod:`thalos_bot.channels.intake.files`),
and handed to the runtime, which keeps it in the media store under ``slack:<file id>``.
Slack answers a download without a valid token with its HTML sign-in page and status
200, so a ``text/html`` answer to a file that is not HTML counts as refused.

The bot token goes only to Slack's own file host (``files.slack.com`` over https, or the
host of ``base_url`` when one is set): a file object naming another host (an external
file kept on Google Drive, or a forged event) is not fetched, and the person is told.
A redirect to another host loses the header (aiohttp drops it across origins).
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

import aiohttp
import structlog

from thalos_bot.channels.intake.files import RemoteFile
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


def remote_files(files: Sequence[SlackFile]) -> tuple[RemoteFile, ...]:
    """What the kit's intake fetches: an audio file (a clip recorded in Slack) is
    transcribed, anything else checked and converted."""
    return tuple(
        RemoteFile(
            "audio" if f.mimetype.lower().startswith("audio/") else "document",
            f.url,
            f"slack:{f.id}",
            f.size,
            f.name,
            f.mimetype,
        )
        for f in files
    )


class SlackFiles:
    """The kit's file source: a file's bytes from Slack's file host, with the bot token."""

    def __init__(self, bot_token: str, timeout: float, origin: tuple[str, str]) -> None:
        self._token = bot_token
        self._origin = origin
        self._timeout = aiohttp.ClientTimeout(total=timeout * 4)
        self._session: aiohttp.ClientSession | None = None

    async def fetch(self, file: RemoteFile) -> bytes:
        if file.size is not None and file.size > DOWNLOAD_LIMIT:
            raise MediaRejectedError(TOO_BIG)
        parts = urlsplit(file.ref)
        if (parts.scheme.lower(), parts.netloc.lower()) != self._origin:
            # Never the token to a host that is not Slack's; the host alone is logged.
            log.warning("slack_file_elsewhere", host=parts.hostname or "", file=file.origin)
            raise MediaRejectedError(NOT_DOWNLOADED)
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        headers = {"Authorization": f"Bearer {self._token}"}
        wants_html = (file.mime_type or "").startswith("text/html")
        try:
            async with self._session.get(file.ref, headers=headers) as response:
                html = response.content_type == "text/html"
                if response.status != 200 or (html and not wants_html):
                    log.warning("slack_file_refused", status=response.status, sign_in_page=html)
                    raise MediaRejectedError(NOT_DOWNLOADED)
                data = await response.content.read(DOWNLOAD_LIMIT + 1)
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.warning("slack_file_download_failed", error=type(exc).__name__)
            raise MediaRejectedError(NOT_DOWNLOADED) from exc
        if len(data) > DOWNLOAD_LIMIT:
            raise MediaRejectedError(TOO_BIG)
        return data

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
