"""The shared CommonMark parse: one parser for every dialect, and the text cut into
pieces that can be rendered (and cached) on their own.

The text is cut at blank lines that no construct spans (outside code fences, not before
a line that continues a list item or indented code, never when a link reference
definition may serve links anywhere), so re-rendering a growing streamed answer on
every tick only parses its last paragraph.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.token import Token

from thalos_bot.channels.text.fences import closes, opens

PARSER = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
PARSER.enable(["table", "strikethrough"])
PARSER.disable(["html_block", "html_inline"])

_DEFINITION = re.compile(r"^ {0,3}\[[^\]\n]+\]:", re.MULTILINE)
"""A link reference definition: it may serve links anywhere, so no piece stands alone."""
_NESTED_QUOTE = re.compile(r"^( {0,3}>)(?:[ \t]{0,3}>)+")
"""Quote markers past the first: quotes are never nested, so they are dropped before
parsing (which also keeps a 10,000-deep quote from reaching the parser's depth limit)."""
_CONTINUES = re.compile(r"[ \t]|[-+*][ \t]|\d{1,9}[.)][ \t]|[-+*]$|\d{1,9}[.)]$")
"""A line that may continue the block before a blank line (list item, indented code)."""


def pieces(source: str) -> list[str]:
    """``source`` cut at blank lines that end every construct, outside code fences."""
    if _DEFINITION.search(source):
        return [source]
    lines = source.split("\n")
    found: list[str] = []
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
            found.append("\n".join(lines[start:index]))
            start = index
        blank = False
        fence = opens(line)
    found.append("\n".join(lines[start:]))
    return found


def too_deep(tokens: list[Token]) -> bool:
    """Did the parser reach its nesting limit (it then skips what nests deeper)?"""
    limit = int(PARSER.options["maxNesting"]) - 1
    for token in tokens:
        if token.level >= limit:
            return True
        if token.children and any(child.level >= limit for child in token.children):
            return True
    return False
