"""The model's Markdown, as Telegram HTML.

The text is parsed as CommonMark (with GitHub's tables and strikethrough) by
markdown-it-py and its tokens are mapped onto Telegram's HTML subset
(:mod:`~thalos_bot_telegram.blocks`, :mod:`~thalos_bot_telegram.inlines`,
:mod:`~thalos_bot_telegram.tables`). Three promises hold for any input:

- the output is HTML Telegram accepts, nested the way Telegram allows;
- HTML in the answer is shown as text, never interpreted;
- a marker without its partner (as in text still being streamed: ``**bo``, an open
  fence) stays literal, or — for a fence — is closed at the end.

The visible text is never longer than the Markdown (the splitter relies on it), and the
time taken grows linearly with the input. Telegram's own check has the last word; a
part it refuses is sent as plain text instead (by the sender).

Rendering is cached by block: the text is cut at blank lines that no construct spans,
and each piece is rendered once, so re-rendering a growing streamed answer on every
tick only parses its last paragraph.
"""

from __future__ import annotations

import re
from functools import lru_cache

from markdown_it import MarkdownIt

from thalos_bot_telegram.blocks import BlockRenderer
from thalos_bot_telegram.fences import closes, opens
from thalos_bot_telegram.inlines import escape, visible

__all__ = ["escape", "to_html", "visible"]

_PARSER = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
_PARSER.enable(["table", "strikethrough"])
_PARSER.disable(["html_block", "html_inline"])

_DEFINITION = re.compile(r"^ {0,3}\[[^\]\n]+\]:", re.MULTILINE)
"""A link reference definition: it may serve links anywhere, so no piece stands alone."""
_CONTINUES = re.compile(r"[ \t]|[-+*][ \t]|\d{1,9}[.)][ \t]|[-+*]$|\d{1,9}[.)]$")
"""A line that may continue the block before a blank line (list item, indented code)."""


def to_html(source: str) -> str:
    rendered = (_render(piece) for piece in _pieces(source))
    return "\n\n".join(html for html in rendered if html)


def _pieces(source: str) -> list[str]:
    """``source`` cut at blank lines that end every construct, outside code fences."""
    if _DEFINITION.search(source):
        return [source]
    lines = source.split("\n")
    pieces: list[str] = []
    start = 0
    fence = None
    blank = False
    for index, line in enumerate(lines):
        if fence is not None:
            if closes(line, fence):
                fence = None
            continue
        if not line.strip():
            blank = True
            continue
        if blank and index > start and not _CONTINUES.match(line):
            pieces.append("\n".join(lines[start:index]))
            start = index
        blank = False
        fence = opens(line)
    pieces.append("\n".join(lines[start:]))
    return pieces


@lru_cache(maxsize=512)
def _render(piece: str) -> str:
    tokens = _PARSER.parse(piece)
    return BlockRenderer(piece.split("\n")).render(tokens)
