"""Splitting long text into Telegram-sized parts.

Telegram limits a message to 4096 UTF-16 code units (an emoji outside the Basic
Multilingual Plane counts twice). Text is split at a paragraph break where one is near
the limit, else at a line break, else at a space, else hard; a code fence that is open
at a split is closed at the end of the part and reopened (with its language) at the
start of the next, so every part renders on its own.

The limit is applied to the Markdown source. Converting it to Telegram HTML only ever
removes visible characters (markers, fences, link targets), so a part that fits as
source also fits once rendered, and fits when sent as plain text after a parse error.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from thalos_bot_telegram.fences import Fence, scan

MAX_UNITS = 4096
_CLOSE_RESERVE = 12  # room for "\n" + a closing fence marker


def utf16_len(text: str) -> int:
    """Length as Telegram counts it, in UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


@dataclass(frozen=True, slots=True)
class Part:
    text: str
    """What to render: a reopened fence, the slice, and a closing fence if cut in one."""
    consumed: int
    """Characters of the input this part stands for, including the separator after it."""
    fence_after: Fence | None
    """The fence still open where this part ends (the next part reopens it)."""


def split(text: str, fence: Fence | None = None, limit: int = MAX_UNITS) -> list[Part]:
    """Cut ``text`` (which starts inside ``fence`` if one is given) into parts of at most
    ``limit`` UTF-16 code units each. Always returns at least one part."""
    parts: list[Part] = []
    position = 0
    while True:
        prefix = f"{fence.opening}\n" if fence is not None else ""
        rest = text[position:]
        budget = limit - utf16_len(prefix)
        if utf16_len(rest) <= budget:
            parts.append(Part(prefix + rest, len(rest), scan(rest, fence)))
            return parts
        cut = _cut(rest, max(2, budget - _CLOSE_RESERVE))
        piece = rest[:cut]
        after = scan(piece, fence)
        body = piece.rstrip()
        if after is not None:
            body += f"\n{after.closing}"
        end = cut
        if rest[end : end + 1] == " ":
            end += 1
        while rest[end : end + 1] == "\n":
            end += 1
        parts.append(Part(prefix + body, end, after))
        position += end
        fence = after


def _cut(text: str, budget: int) -> int:
    """Where to cut ``text`` so that ``text[:cut]`` fits in ``budget`` code units."""
    hard = _fit(text, budget)
    for separator, floor in (("\n\n", 0.3), ("\n", 0.3), (" ", 0.5)):
        index = text.rfind(separator, 0, hard + len(separator))
        if index > hard * floor:
            return index
    return hard


def _fit(text: str, budget: int) -> int:
    """The most leading characters of ``text`` that fit in ``budget`` code units (≥ 1),
    backing off so as not to split a character from its modifier or joiner."""
    used = 0
    for index, char in enumerate(text):
        used += 2 if ord(char) > 0xFFFF else 1
        if used > budget:
            cut = index
            while cut > max(1, index - 16) and _clings(text, cut):
                cut -= 1
            return max(1, cut)
    return len(text)


def _clings(text: str, index: int) -> bool:
    """Would cutting before ``text[index]`` split a grapheme (emoji sequence, accent)?"""
    char, before = text[index], text[index - 1]
    return (
        char in _JOINERS
        or before == "\u200d"
        or "\U0001f3fb" <= char <= "\U0001f3ff"
        or unicodedata.combining(char) > 0
    )


_JOINERS = frozenset({"\u200d", "\ufe0f", "\ufe0e", "\u20e3"})
