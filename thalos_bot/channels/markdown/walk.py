"""A markdown-it token stream, walked block by block into a transport's dialect.

Headings are bold; bullet lists use •/◦/▪ by depth (a task item shows its ☐/☑ box
instead) and numbered lists keep their numbers; quotes become one quote (not every
transport can nest them, so ``> >`` is flattened); code blocks keep their language when
a sane one is given; tables go to :mod:`thalos_bot.channels.markdown.tables`; a
thematic break is the dialect's rule. The markup of each is the
:class:`~thalos_bot.channels.markdown.dialect.Dialect`'s.

Blocks are separated the way the source separates them — a blank line where it has
one, a line break where it has not — so the rendered text is never longer than the
Markdown it came from (the splitter counts on that).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from markdown_it.token import Token

from thalos_bot.channels.markdown.dialect import Dialect
from thalos_bot.channels.markdown.inline import is_task, render_inline
from thalos_bot.channels.markdown.tables import read_table, render_table

_LANGUAGE = re.compile(r"^[\w+#.-]{1,32}$")
_BULLETS = "•◦▪"


@dataclass
class _List:
    ordered: bool
    depth: int
    numbers: list[str]
    """The marker of each item, in order (numbered lists)."""
    item: int = -1


class BlockRenderer:
    """Renders one document's tokens; ``lines`` are its source lines (for tables)."""

    def __init__(self, lines: Sequence[str], dialect: Dialect) -> None:
        self.lines = lines
        self.dialect = dialect
        self.out: list[str] = []
        self.last_line: int | None = None  # where the previous block ended
        self.quote_depth = 0
        self.quote_pending = False  # a quote opened and nothing in it written yet
        self.lists: list[_List] = []
        self.marker: str | None = None  # the item marker still to be written

    def render(self, tokens: Sequence[Token]) -> str:
        index = 0
        while index < len(tokens):
            index = self._token(tokens, index)
        return "".join(self.out)

    # -- the token walk ------------------------------------------------------------

    def _token(self, tokens: Sequence[Token], index: int) -> int:
        token = tokens[index]
        kind = token.type
        if kind in {"paragraph_open", "heading_open"}:
            inline = tokens[index + 1]
            first_in_item = self.marker is not None
            if first_in_item and self.lists and is_task(inline.children or []):
                self.marker = "  " * self.lists[-1].depth  # the box stands in for a bullet
            self._begin(token, indent=True)
            heading = kind == "heading_open"
            render_inline(
                inline.children or [], self.out, self.dialect, bold=heading, task=first_in_item
            )
            return index + 3
        if kind in {"fence", "code_block"}:
            self._code(token)
        elif kind == "hr":
            self._begin(token)
            self.out.append(self.dialect.rule)
        elif kind == "table_open":
            table, after = read_table(tokens, index)
            start, end = token.map or (0, 0)
            self._begin(token)
            render_table(table, "\n".join(self.lines[start:end]), self.out, self.dialect)
            return after
        elif kind == "blockquote_open":
            if self.quote_depth == 0:
                self.quote_pending = True
            self.quote_depth += 1
        elif kind == "blockquote_close":
            self.quote_depth -= 1
            if self.quote_depth == 0:
                if not self.quote_pending:
                    self.out.append(self.dialect.quote()[1])
                self.quote_pending = False
        elif kind in {"bullet_list_open", "ordered_list_open"}:
            self._open_list(tokens, index)
        elif kind in {"bullet_list_close", "ordered_list_close"}:
            self.lists.pop()
            self.marker = None
        elif kind == "list_item_open":
            self._open_item()
        return index + 1

    def _begin(self, token: Token, *, indent: bool = False) -> None:
        """Start a block: the separator, a pending quote tag and item marker."""
        start, end = token.map or (0, 0)
        if self.last_line is not None:
            self.out.append("\n\n" if start > self.last_line else "\n")
        self.last_line = end
        if self.quote_pending:
            self.out.append(self.dialect.quote()[0])
            self.quote_pending = False
        if self.marker is not None:
            self.out.append(self.marker)
            self.marker = None
        elif indent and self.lists:  # a later paragraph of an item: under its text
            self.out.append("  " * (self.lists[-1].depth + 1))

    def _code(self, token: Token) -> None:
        code = token.content.removesuffix("\n")
        if not code.strip():
            return
        self._begin(token)
        language = token.info.strip().split(maxsplit=1)[0] if token.info.strip() else ""
        sane = language if _LANGUAGE.match(language) else None
        self.out.append(self.dialect.code_block(code, sane))

    def _open_list(self, tokens: Sequence[Token], index: int) -> None:
        token = tokens[index]
        ordered = token.type == "ordered_list_open"
        numbers: list[str] = []
        if ordered:
            numbers = _numbers(tokens, index)
        self.lists.append(_List(ordered, len(self.lists), numbers))

    def _open_item(self) -> None:
        current = self.lists[-1]
        current.item += 1
        indent = "  " * current.depth
        if current.ordered and current.item < len(current.numbers):
            self.marker = f"{indent}{current.numbers[current.item]} "
        else:
            self.marker = f"{indent}{_BULLETS[current.depth % len(_BULLETS)]} "


def _numbers(tokens: Sequence[Token], index: int) -> list[str]:
    """The item markers of the numbered list opened at ``tokens[index]``: counted up
    from its start, or as written when counting would make a marker longer than the
    source's (a list numbered 1. 1. 1. … past nine items)."""
    opening = tokens[index]
    level = opening.level + 1
    written: list[str] = []
    delimiter = "."
    for token in tokens[index + 1 :]:
        if token.level < level:
            break
        if token.type == "list_item_open" and token.level == level:
            written.append(token.info)
            delimiter = token.markup or "."
    start = int(str(opening.attrGet("start") or 1))
    counted = [str(start + offset) for offset in range(len(written))]
    if any(len(c) > len(w) for c, w in zip(counted, written, strict=True)):
        counted = [w or c for c, w in zip(counted, written, strict=True)]
    return [f"{number}{delimiter}" for number in counted]
