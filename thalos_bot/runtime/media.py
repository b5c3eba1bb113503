"""A turn's media: what a person sent becomes content blocks, and a request's media
blocks are read back from the store just before it is sent.

Images and PDFs go into the media store once and the history keeps their hash; a text
file becomes a text block headed with its name. The runtime never knows which channel
an attachment came from, and does not trust it to have checked the limits: an image is
made ready here too (a header read when it already is) and a PDF over the page limit is
kept out of the history, because every later request would carry it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from thalos_bot.domain.attachments import Attachment, Inbound, Reattach
from thalos_bot.domain.messages import Block, DocumentBlock, ImageBlock, Message, TextBlock
from thalos_bot.media.fit import Fitted, fit_request
from thalos_bot.media.images import image_size, prepare_image
from thalos_bot.media.limits import MAX_PDF_PAGES, MediaRejectedError
from thalos_bot.media.store import MediaRef, MediaStore, StoredMedia
from thalos_bot.media.work import off_loop

GONE = "[The {what} this message replies to is no longer stored.]"
FILE_HEADING = "[file: {name}]"
NOT_ATTACHED = "[{name} was not attached. {notice}]"


def text_file_block(name: str, content: str) -> TextBlock:
    return TextBlock(f"{FILE_HEADING.format(name=name or 'unnamed')}\n{content}")


@dataclass(frozen=True, slots=True)
class _Measure:
    """What the API prices media by: an image's pixels, a PDF's pages (0: not known)."""

    width: int = 0
    height: int = 0
    pages: int = 0


def _pdf_pages(data: bytes) -> int | None:
    """A PDF's page count (None: unreadable); the PDF reader loads with the first PDF."""
    from thalos_bot.media.pages import pdf_pages

    return pdf_pages(data)


def _measure(kind: str, data: bytes) -> _Measure:
    if kind == "image":
        size = image_size(data)
        return _Measure(*size) if size is not None else _Measure()
    return _Measure(pages=_pdf_pages(data) or 0)


def _block(digest: str, media_type: str, size: int, *, name: str, kind: str, m: _Measure) -> Block:
    if kind == "image":
        return ImageBlock(digest, media_type, size, m.width, m.height)
    return DocumentBlock(digest, media_type, size, name, m.pages)


async def _ref_block(ref: MediaRef, store: MediaStore) -> Block:
    """A re-attached image or PDF, measured from its stored bytes (off the loop)."""
    stored = (await store.get_many([ref.hash])).get(ref.hash)
    measure = _Measure()
    if stored is not None:
        measure = await off_loop(_measure, ref.kind, stored.data)
    return _block(ref.hash, ref.media_type, ref.size, name=ref.name, kind=ref.kind, m=measure)


async def _within_limits(attachment: Attachment) -> tuple[Attachment, _Measure]:
    """``attachment`` as the API takes it and its measure, or :class:`MediaRejectedError`."""
    if attachment.kind == "image":
        ready = await prepare_image(attachment.data)
        measure = _Measure(ready.width, ready.height)
        if ready.data is attachment.data and ready.media_type == attachment.media_type:
            return attachment, measure
        ready_attachment = Attachment(
            "image", ready.media_type, ready.data, attachment.name, attachment.origin
        )
        return ready_attachment, measure
    if attachment.kind == "pdf":
        pages = await off_loop(_pdf_pages, attachment.data)
        if pages is not None and pages > MAX_PDF_PAGES:
            from thalos_bot.media.documents import PDF_TOO_LONG

            raise MediaRejectedError(PDF_TOO_LONG.format(pages=pages))
        return attachment, _Measure(pages=pages or 0)
    return attachment, _Measure()


async def _stored_block(attachment: Attachment, store: MediaStore) -> Block:
    try:
        attachment, measure = await _within_limits(attachment)
    except MediaRejectedError as rejected:
        default = "The image" if attachment.kind == "image" else "The PDF"
        what = f"“{attachment.name}”" if attachment.name else default
        return TextBlock(NOT_ATTACHED.format(name=what, notice=rejected.notice))
    digest = await store.put(
        attachment.data,
        attachment.media_type,
        kind=attachment.kind,
        origin=attachment.origin,
        name=attachment.name,
    )
    size = len(attachment.data)
    if attachment.kind == "text":  # kept for a reply to it; the history holds the text
        return text_file_block(attachment.name, attachment.data.decode("utf-8", "replace"))
    return _block(
        digest, attachment.media_type, size, name=attachment.name, kind=attachment.kind, m=measure
    )


async def user_content(text: str, items: Sequence[Inbound], store: MediaStore) -> tuple[Block, ...]:
    """The blocks of the person's message: media first (as the API advises), then text
    files, then their own words."""
    media: list[Block] = []
    files: list[Block] = []
    for item in items:
        if isinstance(item, Reattach):
            ref = await store.find(item.origin)
            if ref is None:
                files.append(TextBlock(GONE.format(what="file")))
            elif ref.kind == "text":
                stored = (await store.get_many([ref.hash])).get(ref.hash)
                text = stored.data.decode("utf-8", "replace") if stored is not None else ""
                files.append(text_file_block(ref.name, text))
            else:
                media.append(await _ref_block(ref, store))
        elif item.kind == "text":
            files.append(await _stored_block(item, store))
        else:
            media.append(await _stored_block(item, store))
    words = (TextBlock(text),) if text.strip() else ()
    return (*media, *files, *words)


async def resolve(messages: Sequence[Message], store: MediaStore) -> dict[str, StoredMedia]:
    """The bytes of every media block in ``messages`` that the store still has."""
    hashes = {block.media_hash for message in messages for block in message.media}
    if not hashes:
        return {}
    return await store.get_many(hashes)


async def fitted(messages: Sequence[Message], store: MediaStore, *, fixed_bytes: int) -> Fitted:
    """``messages`` with their media read from ``store`` and fitted to the API's limits
    (:func:`thalos_bot.media.fit.fit_request`, off the event loop and under the media
    limiter: it may scale images again)."""
    media = await resolve(messages, store)
    if not media:
        return Fitted(list(messages), media)
    return await off_loop(_fit, messages, media, fixed_bytes)


def _fit(messages: Sequence[Message], media: dict[str, StoredMedia], fixed_bytes: int) -> Fitted:
    return fit_request(messages, media, fixed_bytes=fixed_bytes)
