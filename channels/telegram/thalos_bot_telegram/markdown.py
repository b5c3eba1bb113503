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
from markdown_it.token import Token

from thalos_bot_telegram.blocks import BlockRenderer
from thalos_bot_telegram.fences import closes, opens
from thalos_bot_telegram.inlines import escape, marker_flood, visible

__all__ = ["clear_cache", "escape", "to_html", "visible"]

_PARSER = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
_PARSER.enable(["table", "strikethrough"])
_PARSER.disable(["html_block", "html_inline"])

_DEFINITION = re.compile(r"^ {0,3}\[[^\]\n]+\]:", re.MULTILINE)
"""A link reference definition: it may serve links anywhere, so no piece stands alone."""
_NESTED_QUOTE = re.compile(r"^( {0,3}>)(?:[ \t]{0,3}>)+")
"""Quote markers past the first: Telegram cannot nest quotes, so they are dropped before
parsing (which also keeps a 10,000-deep quote from reaching the parser's depth limit)."""
_CONTINUES = re.compile(r"[ \t]|[-+*][ \t]|\d{1,9}[.)][ \t]|[-+*]$|\d{1,9}[.)]$")
"""A line that may continue the block before a blank line (list item, indented code)."""


def to_html(source: str) -> str:
    rendered = (_render(piece.rstrip("\n")) for piece in _pieces(source))
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
    for index, raw in enumerate(lines):
        line = raw
        if fence is not None:
            if closes(line, fence):
                fence = None
            continue
        if not line.strip():
            blank = True
            continue
        if line.lstrip().startswith(">"):
            line = lines[index] = _NESTED_QUOTE.sub(r"\1", line)
        if blank and index > start and not _CONTINUES.match(line):
            pieces.append("\n".join(lines[start:index]))
            start = index
        blank = False
        fence = opens(line)
    pieces.append("\n".join(lines[start:]))
    return pieces


@lru_cache(maxsize=512)
def _render(piece: str) -> str:
    if marker_flood(piece):
        return escape(piece)
    tokens = _PARSER.parse(piece)
    if _too_deep(tokens):
        return escape(piece)  # the parser skips what nests too deep: show it all as text
    html = BlockRenderer(piece.split("\n")).render(tokens)
    if _units(visible(html)) > _units(piece):
        return escape(piece)  # a corner (tabs expanded in code) made it longer: never
    return html


def _units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def clear_cache() -> None:
    """Forget rendered blocks (for benchmarks that measure a cold render)."""
    _render.cache_clear()


def _too_deep(tokens: list[Token]) -> bool:
    limit = int(_PARSER.options["maxNesting"]) - 1
    for token in tokens:
        if token.level >= limit:
            return True
        if token.children and any(child.level >= limit for child in token.children):
            return True
    return False
