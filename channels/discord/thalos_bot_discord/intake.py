"""Files sent with a Discord message, for the kit's intake: each attachment a
:class:`~thalos_bot.channels.intake.files.RemoteFile` (kept in the media store as
``discord:<attachment id>``), read from Discord's CDN through discord.py's client (as
``Attachment.read`` does) when the intake asks for it."""

from __future__ import annotations

import discord
import structlog

from thalos_bot.channels.intake.files import RemoteFile
from thalos_bot.media.limits import MediaRejectedError

log = structlog.get_logger(__name__)

DOWNLOAD_LIMIT = 25 * 1024 * 1024
"""The largest attachment the intake fetches (a free account uploads up to 10 MiB; Nitro
and boosted servers allow more, which the model could not take whole anyway)."""
TOO_BIG = "That file is too big for me to read (the limit is 25 MB)."
NOT_DOWNLOADED = "I couldn't download that file from Discord; please send it again."


def remote_files(message: discord.Message) -> tuple[RemoteFile, ...]:
    """The message's attachments (discord.py keeps their fields as sent: one without a
    text URL and name is skipped, the rest is the kit's reading of a claim)."""
    files = []
    for item in message.attachments:
        url: object = item.url
        name: object = item.filename
        if not isinstance(url, str) or not isinstance(name, str):
            log.warning("discord_attachment_unreadable", attachment=item.id)
            continue
        origin, voice = f"discord:{item.id}", item.is_voice_message()
        files.append(
            RemoteFile.claimed(
                url, origin, name, size=item.size, mime=item.content_type, voice=voice
            )
        )
    return tuple(files)


class DiscordFiles:
    """The kit's file source: an attachment's bytes from Discord's CDN."""

    def __init__(self, client: discord.Client) -> None:
        self._client = client

    async def fetch(self, file: RemoteFile) -> bytes:
        if file.size is not None and file.size > DOWNLOAD_LIMIT:
            raise MediaRejectedError(TOO_BIG)
        try:
            return await self._client.http.get_from_cdn(file.ref)
        except (discord.HTTPException, OSError) as exc:
            log.warning("discord_file_download_failed", error=type(exc).__name__)
            raise MediaRejectedError(NOT_DOWNLOADED) from None
