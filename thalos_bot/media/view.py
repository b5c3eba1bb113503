"""Media in what a request is planned on: its size estimate, and the short placeholder
that stands for an old image or PDF so it is not sent (and paid for) on every turn.

The stored history keeps the hash; only the request and the summary transcript see the
placeholder, so nothing is lost for good.
"""

from __future__ import annotations

from collections.abc import Sequence

from thalos_bot.domain.messages import Block, DocumentBlock, ImageBlock, Message, TextBlock

IMAGE_CHARS = 1600 * 4
"""An image scaled to a 1568 px long edge costs about 1,600 tokens (Anthropic's
width x height / 750), counted in characters like everything else."""
PDF_CHARS_PER_BYTE = 0.25
"""A rough figure: a PDF page costs 1,500-3,000 tokens of text plus its image."""


def media_chars(block: ImageBlock | DocumentBlock) -> int:
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
