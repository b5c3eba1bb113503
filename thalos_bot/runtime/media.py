"""A turn's media: what a person sent becomes content blocks, and a request's media
blocks are read back from the store just before it is sent.

Images and PDFs go into the media store once and the history keeps their hash; a text
file becomes a text block headed with its name. The runtime never knows which channel
an attachment came from.
"""

from __future__ import annotations

from collections.abc import Sequence

from thalos_bot.domain.attachments import Attachment, Inbound, Reattach
from thalos_bot.domain.messages import Block, DocumentBlock, ImageBlock, Message, TextBlock
from thalos_bot.media.store import MediaRef, MediaStore, StoredMedia

GONE = "[The {what} this message replies to is no longer stored.]"
FILE_HEADING = "[file: {name}]"


def text_file_block(name: str, content: str) -> TextBlock:
    return TextBlock(f"{FILE_HEADING.format(name=name or 'unnamed')}\n{content}")


def _ref_block(ref: MediaRef) -> Block:
    if ref.kind == "image":
        return ImageBlock(ref.hash, ref.media_type, ref.size)
    return DocumentBlock(ref.hash, ref.media_type, ref.size, ref.name)


async def _stored_block(attachment: Attachment, store: MediaStore) -> Block:
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
    if attachment.kind == "image":
        return ImageBlock(digest, attachment.media_type, size)
    return DocumentBlock(digest, attachment.media_type, size, attachment.name)


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
                media.append(_ref_block(ref))
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
