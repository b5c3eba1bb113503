"""Files sent with a Discord message, as attachments for the model.

Each attachment is downloaded from Discord's CDN through discord.py (``Attachment.read``)
and checked like every channel's: images scaled and re-encoded, PDFs and text files read
(:mod:`thalos_bot.media`); the runtime then keeps them in the media store under
``discord:<attachment id>``. Something that cannot go to the model is refused with a
notice that names the reason; the message's words are not sent without it.
"""

from __future__ import annotations

import discord
import structlog

from thalos_bot.domain.attachments import Attachment
from thalos_bot.media.documents import is_svg, might_read, not_understood, read_document_off_loop
from thalos_bot.media.images import prepare_image
from thalos_bot.media.limits import MediaRejectedError

log = structlog.get_logger(__name__)

DOWNLOAD_LIMIT = 25 * 1024 * 1024
"""The largest attachment the intake fetches (a free account uploads up to 10 MiB; Nitro
and boosted servers allow more, which the model could not take whole anyway)."""
TOO_BIG = "That file is too big for me to read (the limit is 25 MB)."
NOT_DOWNLOADED = "I couldn't download that file from Discord; please send it again."


async def attachments_of(message: discord.Message, *, max_chars: int) -> tuple[Attachment, ...]:
    return tuple([await _attachment(item, max_chars) for item in message.attachments])


async def _attachment(item: discord.Attachment, max_chars: int) -> Attachment:
    name = item.filename
    mime = (item.content_type or "").split(";")[0].strip() or None
    claims_image = (mime or "").startswith("image/")
    if not claims_image and not might_read(name, mime):
        raise MediaRejectedError(not_understood(name))
    if item.size > DOWNLOAD_LIMIT:
        raise MediaRejectedError(TOO_BIG)
    try:
        data = await item.read()
    except (discord.HTTPException, OSError) as exc:
        log.warning("discord_file_download_failed", error=type(exc).__name__)
        raise MediaRejectedError(NOT_DOWNLOADED) from None
    origin = f"discord:{item.id}"
    if claims_image and not is_svg(name, mime, data):
        image = await prepare_image(data)
        return Attachment("image", image.media_type, image.data, name, origin)
    document = await read_document_off_loop(name, mime, data, max_chars=max_chars)
    return Attachment(document.kind, document.media_type, document.data, name, origin)
