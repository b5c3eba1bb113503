"""What is open where a long answer is cut between two messages, and how to close it at
the end of one part and reopen it at the top of the next.

Three things can be open at a cut: a code fence (closed with its marker, reopened with
its marker and language), a table (the next part repeats its header and delimiter
rows), and inline formatting — bold, italic, strikethrough, a code span, a link's text.

Inline state comes from the parser itself: a whitespace character that occurs nowhere
else is put where the cut is, the paragraph is parsed, and the styles open around that
character are read off the token stream. A whitespace character next to the
whitespace the cut is made at changes no delimiter's left/right-flanking class, so the
parse is the same one the reader would get without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from markdown_it import MarkdownIt

from thalos_bot.channels.markdown.flood import marker_flood
from thalos_bot.channels.text.fences import Fence

_SENTINELS = "\u2008\u2009\u200a\u2002\u2003\u2004\u2005\u2006\u2007\u3000"
_PARSER = MarkdownIt("commonmark", {"html": False}).enable(["strikethrough"])
_PARSER.disable(["html_inline"])
_DELIMITER_ROW = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")

_MARKUP = {"strong_open": ("**", "**"), "em_open": ("*", "*"), "s_open": ("~~", "~~")}
_CLOSERS = frozenset({"strong_close", "em_close", "s_close", "link_close"})


@dataclass(frozen=True, slots=True)
class Carry:
    """What the next part must reopen, as Markdown put in front of its text."""

    fence: Fence | None = None
    """The code fence open at the cut."""
    table: str = ""
    """The header and delimiter rows of the table cut between two rows, with a newline."""
    inline: str = ""
    """Markdown reopening the inline styles open at the cut (``**``, ``*``, a backtick…)."""
    debt: int = 0
    """Units the parts so far fell short of the splitter's floor (negative: ahead of it)."""

    @property
    def prefix(self) -> str:
        opening = f"{self.fence.opening}\n" if self.fence is not None else ""
        return opening + self.table + self.inline


@dataclass(frozen=True, slots=True)
class Inline:
    """The inline styles open at a cut: Markdown closing them at the end of a part, and
    Markdown reopening them at the start of the next."""

    close: str = ""
    reopen: str = ""


def inline_at(paragraph: str, at: int) -> Inline:
    """The inline styles open at ``paragraph[at]`` (the first character after the cut)."""
    sentinel = next((char for char in _SENTINELS if char not in paragraph), None)
    if sentinel is None or marker_flood(paragraph):
        return Inline()  # a flood of markers is rendered as text: nothing to carry
    return _inline(paragraph[:at] + sentinel + paragraph[at:], sentinel)


def clear_cache() -> None:
    """Forget parsed cuts (for benchmarks that measure a cold split)."""
    _inline.cache_clear()


@lru_cache(maxsize=256)
def _inline(marked: str, sentinel: str) -> Inline:
    tokens = _PARSER.parseInline(marked)
    children = tokens[0].children or [] if tokens else []
    stack: list[tuple[str, str]] = []
    for token in children:
        kind = token.type
        if kind in _MARKUP:
            stack.append(_MARKUP[kind])
        elif kind == "link_open":
            stack.append(("[", "]()"))
        elif kind in _CLOSERS:
            if stack:
                stack.pop()
        elif sentinel in token.content:
            if kind == "code_inline":
                stack.append((token.markup, token.markup))
            elif kind != "text":
                return Inline()  # inside an image's label or the like: nothing to carry
            return Inline(
                close="".join(close for _, close in reversed(stack)),
                reopen="".join(opening for opening, _ in stack),
            )
    return Inline()


def table_header(lines: list[str]) -> str:
    """If the last of ``lines`` is a row of a table whose header is among them, the
    header and delimiter rows (each followed by a newline); else ''."""
    for index in range(len(lines) - 1, 0, -1):
        line = lines[index]
        if "|" not in line or not line.strip():
            return ""
        if _DELIMITER_ROW.match(line) and "|" in lines[index - 1]:
            if index == len(lines) - 1:
                return ""  # the cut is right after the delimiter row: no body row yet
            return f"{lines[index - 1]}\n{line}\n"
    return ""
