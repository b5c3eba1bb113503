"""Media in what a request is planned on: its size estimate, and the short placeholder
that stands for an old image or PDF so it is not sent (and paid for) on every turn.

The stored history keeps the hash; only the request and the summary transcript see the
placeholder, so nothing is lost for good.
"""

from __future__ import annotations

from collections.abc import Sequence

from thalos_bot.domain.messages import Block, DocumentBlock, ImageBlock, Message, TextBlock

CHARS_PER_TOKEN = 4
"""Media are counted in characters like everything else in the plan (the compaction
module's figure), four to a token."""
IMAGE_TOKENS_MAX = 1600
"""Anthropic scales an image down before the model sees it until it costs about 1,600
tokens at most (and its long edge is at most 1568 px)."""
IMAGE_LONG_EDGE = 1568
PIXELS_PER_TOKEN = 750
"""Anthropic: an image costs about width x height / 750 tokens."""
PDF_PAGE_TOKENS = 3000
"""Anthropic sends each PDF page as its text (1,500-3,000 tokens a page, the docs say)
and as an image of the page; the top of that range stands for both. A page is priced
the same whether the file is 30 KB of text or 5 MB of scan."""
IMAGE_CHARS = IMAGE_TOKENS_MAX * CHARS_PER_TOKEN
"""An image whose size is not known is priced as the largest the model sees."""
PDF_CHARS_PER_BYTE = 0.25
"""Only for a PDF whose page count is not known (stored before pages were recorded, or
unreadable to pypdf): a rough figure by its size."""


def image_tokens(width: int, height: int) -> int:
    """What the API charges for an image of ``width`` x ``height`` pixels."""
    long_edge = max(width, height)
    if long_edge > IMAGE_LONG_EDGE:
        scale = IMAGE_LONG_EDGE / long_edge
        width, height = round(width * scale), round(height * scale)
    return max(1, min(IMAGE_TOKENS_MAX, -(-width * height // PIXELS_PER_TOKEN)))


def media_tokens(block: ImageBlock | DocumentBlock) -> int | None:
    """The API's price of ``block`` in tokens, when its pixels or pages are known."""
    if isinstance(block, ImageBlock):
        if block.width > 0 and block.height > 0:
            return image_tokens(block.width, block.height)
        return None
    return block.pages * PDF_PAGE_TOKENS if block.pages > 0 else None


def media_chars(block: ImageBlock | DocumentBlock) -> int:
    """``block``'s cost in the plan's characters: an image by its pixels, a PDF by its
    pages (as the API prices them); a rough figure when those are not known."""
    known = media_tokens(block)
    if known is not None:
        return known * CHARS_PER_TOKEN
    if isinstance(block, ImageBlock):
        return IMAGE_CHARS
    return max(IMAGE_CHARS, int(block.size * PDF_CHARS_PER_BYTE))


def placeholder(block: ImageBlock | DocumentBlock) -> TextBlock:
    size = f"{max(1, round(block.size / 1024)):,} KB"
    if isinstance(block, ImageBlock):
        return TextBlock(f"[An earlier image ({block.media_type}, {size}), not shown again.]")
    name = f" {block.name}" if block.name else ""
    return TextBlock(f"[An earlier PDF{name} ({size}), not shown again.]")


def _turn_cutoff(messages: Sequence[Message], keep_turns: int) -> int:
    """The index of the oldest of the last ``keep_turns`` turn starts (0 when fewer)."""
    if keep_turns <= 0:
        return len(messages)
    seen = 0
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].starts_turn:
            seen += 1
            if seen == keep_turns:
                return index
    return 0


def _replaced(message: Message) -> Message:
    content: list[Block] = [
        placeholder(b) if isinstance(b, ImageBlock | DocumentBlock) else b for b in message.content
    ]
    return Message(message.role, tuple(content))


def without_old_media(messages: Sequence[Message], *, keep_turns: int) -> list[Message]:
    """``messages`` with media older than the last ``keep_turns`` turns replaced by a
    placeholder. Messages that change are new objects; the others are shared."""
    out = list(messages)
    for index in range(_turn_cutoff(messages, keep_turns)):
        if messages[index].media:
            out[index] = _replaced(messages[index])
    return out
