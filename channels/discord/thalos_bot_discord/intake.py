"""Files sent with a Discord message, for the kit's intake: each attachment a
:class:`~thalos_bot.channels.intake.files.RemoteFile` (kept in the media store as
``discord:<attachment id>``), read from Discord's CDN through discord.py's client (as
``Attachment.read`` does) when the intake asks for it."""

from __future__ import annotations

import discord
import structlog

from thalos_bot.channels.intake.files import FetchLimit, RemoteFile

log = structlog.get_logger(__name__)

LIMIT = FetchLimit(25 * 1024 * 1024, "Discord")
"""The largest attachment the intake fetches (a free account uploads up to 10 MiB; Nitro
and boosted servers allow more, which the model could not take whole anyway)."""


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
        LIMIT.claim(file)
        try:
            return await self._client.http.get_from_cdn(file.ref)
        except (discord.HTTPException, OSError) as exc:
            log.warning("discord_file_download_failed", error=type(exc).__name__)
            raise LIMIT.refusal(too_big=False) from None
