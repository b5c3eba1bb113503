"""Splitting long Markdown into parts that fit a transport's length limit.

The limit is the transport's, given as data (``limit``, in UTF-16 code units: an emoji
outside the Basic Multilingual Plane counts two; Telegram's is 4096). A transport whose
limit is in bytes of UTF-8 passes a third of it (no UTF-16 unit takes more than three
bytes). Every part but the last carries at least ``limit - 96 * limit // 4096`` units of
the answer (4000 of 4096), so an answer of ``n`` units never takes more than
``ceil(n / floor)`` messages, whatever it contains. Within the last few dozen units
before the limit, the cut is made at a paragraph break, else a line break, else a
space, else hard (never inside an emoji sequence or before an accent).

Whatever is open at the cut is closed at the end of the part and reopened at the top of
the next (:mod:`~thalos_bot.channels.text.carry`): a code fence, a table's header, bold,
italic, strikethrough, a code span, a link. What is reopened is bounded, so that it
can never eat the budget.

The limit is applied to the Markdown of each part. A dialect renderer built on
:mod:`thalos_bot.channels.markdown` never shows more characters than the Markdown has
(markers, fences, link targets are removed), so a part that fits as Markdown also fits
once rendered, and fits when sent as plain text after a parse error.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace

from thalos_bot.channels.text.carry import Carry, Inline, inline_at, table_header
from thalos_bot.channels.text.fences import Fence, scan
from thalos_bot.channels.text.measure import utf16_len

__all__ = ["Carry", "Part", "split", "utf16_len"]

_REFERENCE = 4096
_SLACK = 96
"""Of every :data:`_REFERENCE` units of the limit, what a part may fall short of it."""
_CLOSE_RESERVE = 24  # room for what closes the part: a fence marker, inline markers
_REOPEN_CAP = 64  # the most a reopening prefix may take
_BLOCK_START = re.compile(r"[-+*>#=|`~_<]|\d{1,9}[.)](?:\s|$)")
_LOOKAHEAD = 2048  # how far past a cut a style may close and still be carried
_LOOKBEHIND = 2048  # how far before a cut a style may open and still be carried


@dataclass(frozen=True, slots=True)
class Part:
    text: str
    """What to render: what the previous part left open, the slice, and what closes it."""
    consumed: int
    """Characters of the input this part stands for, including the separator after it."""
    fence_after: Carry | None
    """What is still open where this part ends (the next part reopens it)."""


def split(text: str, fence: Carry | None, limit: int) -> list[Part]:
    """Cut ``text`` (which starts inside ``fence`` — what the previous part left open —
    if one is given) into parts of at most ``limit`` UTF-16 code units each. Always
    returns at least one part."""
    limits = _Limits.of(limit)
    parts: list[Part] = []
    position = 0
    carry = fence
    while True:
        prefix = carry.prefix if carry is not None else ""
        rest = text[position:]
        if utf16_len(prefix) + utf16_len(rest) <= limit:
            parts.append(Part(prefix + rest, len(rest), _after(rest, carry)))
            return parts
        part = _part(rest, carry, prefix, limits)
        parts.append(part)
        position += part.consumed
        carry = part.fence_after


@dataclass(frozen=True, slots=True)
class _Limits:
    limit: int
    floor: int
    """What every part but the last carries, at least on average (see :func:`_cut`)."""
    reserve: int
    """Room kept for what closes a part."""

    @classmethod
    def of(cls, limit: int) -> _Limits:
        floor = max(limit - _SLACK * limit // _REFERENCE, limit // 2)
        return cls(limit, floor, min(_CLOSE_RESERVE, (limit - floor) // 4))


def _part(rest: str, carry: Carry | None, prefix: str, limits: _Limits) -> Part:
    debt = carry.debt if carry is not None else 0
    budget = max(limits.limit - utf16_len(prefix) - limits.reserve, limits.floor)
    for _ in range(4):
        cut, end = _cut(rest, budget, limits.floor, debt)
        text, after = _close(rest, cut, end, carry, prefix)
        if utf16_len(text) <= limits.limit:
            consumed = max(end, 1)
            owed = debt + limits.floor - utf16_len(rest[:consumed])
            after = replace(after or Carry(), debt=owed)
            return Part(text, consumed, after if after != Carry() else None)
        budget -= max(utf16_len(text) - limits.limit, 16)
    cut = _fit(rest, max(1, limits.limit - utf16_len(prefix)), 0)
    return Part(prefix + rest[:cut], cut, None)  # not reached: the reserve covers closing


def _after(piece: str, carry: Carry | None) -> Carry | None:
    fence = scan(piece, carry.fence if carry is not None else None)
    return Carry(fence=fence) if fence is not None else None


def _cut(text: str, budget: int, floor: int, debt: int) -> tuple[int, int]:
    """Where to cut ``text``: the part is ``text[:cut]`` (at most ``budget`` units), the
    next starts at ``end`` (after the space or line breaks cut at).

    A part normally carries at least ``floor`` units, cut within the last few dozen
    units before the budget. It may end earlier at a paragraph break (or a line break
    late in the part) if the shortfall, added to the ``debt`` earlier parts ran up and
    less what longer parts paid back, stays within ``floor``. Over a whole answer the
    parts then miss ``floor`` units each by at most ``floor`` in total: one message
    more than ``ceil(units / floor)`` at worst, however the answer grows while
    streaming.
    """
    hard = _fit(text, budget, floor)
    low = _fit(text, floor, 0)
    early = _fit(text, max(0, debt), 0)  # the shortest part the debt still allows
    for separator, share in (("\n\n", 0.3), ("\n", 0.8)):
        start = min(max(early, _fit(text, int(budget * share), 0)), low)
        index = text.rfind(separator, start, hard + len(separator))
        if start <= index <= hard:
            return index, _skip_breaks(text, index)
    space = _space(text, low, hard)
    if space is not None:
        return space, space + 1
    return hard, hard


def _close(
    rest: str, cut: int, end: int, carry: Carry | None, prefix: str
) -> tuple[str, Carry | None]:
    """The text of the part that ends at ``cut`` (the next starts at ``end``), and what
    the next part must reopen."""
    piece = rest[:cut]
    body = piece.rstrip()
    fence = scan(piece, carry.fence if carry is not None else None)
    if fence is not None:
        reopen = _reopenable(fence)
        # A part ends its fence (an open one is closed by the renderer anyway, but the
        # plain-text fallback reads better closed) unless the marker is absurdly long.
        closing = f"\n{fence.closing}" if len(fence.closing) <= 16 else ""
        return f"{prefix}{body}{closing}", Carry(fence=reopen) if reopen else None
    if "\n\n" in rest[cut:end] or end >= len(rest):
        return prefix + body, None
    lines = (prefix + piece).split("\n")
    header = table_header(lines) if rest[cut : cut + 1] == "\n" else ""
    if header and utf16_len(header) <= _REOPEN_CAP:
        return prefix + body, Carry(table=header)
    state = _inline_state(prefix + piece, rest, cut, end)
    if not state.reopen or utf16_len(state.close) > _CLOSE_RESERVE:
        return prefix + body, None
    if utf16_len(state.reopen) > _REOPEN_CAP:
        return prefix + body, None
    return prefix + body + state.close, Carry(inline=state.reopen)


def _inline_state(before: str, rest: str, cut: int, end: int) -> Inline:
    """The inline styles open at the cut: ``before`` is the part up to the cut, the next
    part starts at ``rest[end]``. Only the paragraph around the cut is parsed."""
    head = before
    for boundary in ("\n\n", "\n```", "\n~~~"):
        index = head.rfind(boundary)
        if index >= 0:
            head = head[index + len(boundary) :]
    if len(head) > _LOOKBEHIND:  # start at a line start, if there is one close by
        head = head[-_LOOKBEHIND:]
        head = head[head.find("\n") + 1 :]
    after = rest[end : end + _LOOKAHEAD]
    stop = after.find("\n\n")
    if stop >= 0:
        after = after[:stop]
    separator = rest[cut:end]
    return inline_at(head + separator + after, len(head) + len(separator))


def _reopenable(fence: Fence) -> Fence | None:
    """The fence to reopen in the next part, if its marker is short enough."""
    marker = fence.marker if len(fence.marker) <= 16 else fence.marker[:3]
    reopened = Fence(marker, fence.language or "")
    return reopened if utf16_len(reopened.opening) < _REOPEN_CAP else None


def _skip_breaks(text: str, index: int) -> int:
    while text[index : index + 1] == "\n":
        index += 1
    return index


def _space(text: str, low: int, hard: int) -> int | None:
    """The last space in ``text[low:hard + 1]``, preferring one after which the next
    part does not start like a block (a list marker, a heading, a quote)."""
    first: int | None = None
    index = hard + 1
    for _ in range(8):
        index = text.rfind(" ", low, index)
        if index < low:
            break
        if first is None:
            first = index
        if not _BLOCK_START.match(text, index + 1):
            return index
    return first


def _fit(text: str, budget: int, floor: int) -> int:
    """The most leading characters of ``text`` that fit in ``budget`` code units (≥ 1),
    backing off (not below ``floor`` units) so as not to split a character from its
    modifier or joiner."""
    used = 0
    for index, char in enumerate(text):
        used += 2 if ord(char) > 0xFFFF else 1
        if used > budget:
            cut = index
            least = max(1, index - 16)
            while cut > least and _clings(text, cut) and utf16_len(text[: cut - 1]) >= floor:
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
