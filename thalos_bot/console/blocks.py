"""Cut streamed Markdown into blocks that are finished, so each can be rendered once.

A block is finished when a blank line follows it outside a code fence, or when its
closing fence arrives. What comes after the last finished block is the tail: still
being written, shown as plain text until it is finished too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True, slots=True)
class Split:
    finished: list[str]
    """Complete blocks, in order, without their separating blank lines."""
    tail_start: int
    """Where the unfinished rest begins in the text that was split."""


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(fence) and set(stripped) == {fence[0]}


def split_blocks(text: str) -> Split:
    """``text`` as complete blocks plus where the unfinished tail starts. Only complete
    lines count: a line still being written always stays in the tail."""
    finished: list[str] = []
    block: list[str] = []
    block_start = 0
    fence: str | None = None
    position = 0
    tail_start = 0
    for line in text.split("\n")[:-1]:
        end = position + len(line) + 1
        if not block:
            block_start = position
        if fence is not None:
            block.append(line)
            if _closes(line, fence):
                fence = None
                finished.append("\n".join(block))
                block = []
                tail_start = end
        elif (marker := _FENCE.match(line)) is not None:
            fence = marker.group(1)
            block.append(line)
        elif line.strip():
            block.append(line)
        else:
            if block:
                finished.append("\n".join(block))
                block = []
            tail_start = end
        position = end
    if block:
        tail_start = block_start
    return Split(finished, tail_start)
