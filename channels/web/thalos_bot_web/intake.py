"""Files sent from the page, checked and converted as the Telegram channel does.

An upload is a photo or image, a PDF or a text file; it is checked against the same
limits (20 MB a file, the model's media types and sizes), in worker threads, and sent
to the model with the message. When any file is refused, the person gets the notice
that names the limit and nothing of that message goes to the model.
"""

from __future__ import annotations

from dataclasses import dataclass

from thalos_bot.domain.attachments import Attachment
from thalos_bot.media.documents import is_svg, might_read, not_understood, read_document_off_loop
from thalos_bot.media.images import prepare_image
from thalos_bot.media.limits import MediaRejectedError

TOO_BIG = "That file is larger than {limit} MB, the most the web chat takes. Send a smaller one."
TOO_MANY = "That is more than {limit} files in one message. Send fewer at a time."


@dataclass(frozen=True, slots=True)
class Upload:
    name: str
    media_type: str | None
    data: bytes


async def attachment(upload: Upload, *, max_bytes: int, max_chars: int) -> Attachment:
    """``upload`` ready for the model, or :class:`MediaRejectedError` saying why not."""
    if len(upload.data) > max_bytes:
        raise MediaRejectedError(TOO_BIG.format(limit=max_bytes // (1024 * 1024)))
    if not might_read(upload.name, upload.media_type):
        raise MediaRejectedError(not_understood(upload.name))
    claims_image = (upload.media_type or "").lower().startswith("image/")
    if claims_image and not is_svg(upload.name, upload.media_type, upload.data):
        image = await prepare_image(upload.data)
        return Attachment("image", image.media_type, image.data, upload.name)
    document = await read_document_off_loop(
        upload.name, upload.media_type, upload.data, max_chars=max_chars
    )
    return Attachment(document.kind, document.media_type, document.data, upload.name)


async def attachments(
    uploads: list[Upload], *, max_files: int, max_bytes: int, max_chars: int
) -> tuple[Attachment, ...]:
    if len(uploads) > max_files:
        raise MediaRejectedError(TOO_MANY.format(limit=max_files))
    return tuple([await attachment(u, max_bytes=max_bytes, max_chars=max_chars) for u in uploads])
