"""A Markdown table, in a form a chat can show.

Chat clients show no tables and use a proportional font, so raw pipes never line up.
Three forms, the first that fits is used:

1. **Grid** — the cells padded into columns inside the dialect's monospace block, when a
   row is at most :data:`PHONE_COLUMNS` wide (what a phone shows without wrapping).
2. **Cards** — for a wider table, one block per row: the first cell in bold, then a
   ``header: value`` line for each other cell. Reads well at any width, and keeps the
   cells' links and emphasis.
3. **Source** — the table's own lines, as text, when neither form is shorter than them.

A form is used only if it shows no more characters than the table's source has: the
splitter relies on rendering never making a part longer than its Markdown.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from markdown_it.token import Token

from thalos_bot.channels.markdown.dialect import Dialect
from thalos_bot.channels.markdown.inline import plain_text, render_inline

PHONE_COLUMNS = 40
"""Monospace columns a phone shows in a message without wrapping (portrait)."""


@dataclass
class Table:
    """The cells of one table, read from its tokens."""

    header: list[list[Token]] = field(default_factory=list)
    rows: list[list[list[Token]]] = field(default_factory=list)
    align: list[str] = field(default_factory=list)


def read_table(tokens: Sequence[Token], start: int) -> tuple[Table, int]:
    """Read the table whose ``table_open`` is ``tokens[start]``; return it and the index
    after its ``table_close``."""
    table = Table()
    row: list[list[Token]] | None = None
    in_head = False
    index = start + 1
    while index < len(tokens):
        token = tokens[index]
        kind = token.type
        if kind == "table_close":
            return table, index + 1
        if kind == "thead_open":
            in_head = True
        elif kind == "thead_close":
            in_head = False
        elif kind == "tr_open":
            row = []
        elif kind == "tr_close" and row is not None:
            if in_head:
                table.header = row
            else:
                table.rows.append(row)
            row = None
        elif kind in {"th_open", "td_open"} and in_head:
            style = str(token.attrGet("style") or "")
            table.align.append(style.removeprefix("text-align:"))
        elif kind == "inline" and row is not None:
            row.append(token.children or [])
        index += 1
    return table, index


def width(text: str) -> int:
    """Monospace columns: East Asian wide characters and emoji take two."""
    columns = 0
    for char in text:
        if unicodedata.combining(char) or char in "\u200d\ufe0f":
            continue
        wide = unicodedata.east_asian_width(char) in "WF" or ord(char) > 0xFFFF
        columns += 2 if wide else 1
    return columns


def units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def render_table(table: Table, source: str, out: list[str], dialect: Dialect) -> None:
    """Append the best form of ``table`` that is no longer than ``source`` (its lines)."""
    budget = units(source)
    grid = _grid(table)
    if grid is not None and units(grid) <= budget:
        out.append(dialect.preformatted(grid))
        return
    cards = _cards(table, dialect)
    if units(dialect.visible("".join(cards))) <= budget:
        out.append("".join(cards))
        return
    out.append(dialect.escape(source))


def grid(header: list[str], rows: list[list[str]], align: Sequence[str] = ()) -> list[str]:
    """The lines of a table's cells padded into columns (as many as ``header`` has), with
    a rule under the header: what a monospace block shows."""
    widths = [width(text) for text in header]
    for row in rows:
        for column, text in enumerate(row[: len(widths)]):
            widths[column] = max(widths[column], width(text))
    lines = [_line(header, widths, align), "─┼─".join("─" * w for w in widths)]
    lines += [_line(row, widths, align) for row in rows]
    return [line.rstrip() for line in lines]


def _grid(table: Table) -> str | None:
    header = [plain_text(cell).strip() for cell in table.header]
    rows = [[plain_text(cell).strip() for cell in row] for row in table.rows]
    lines = grid(header, rows, table.align)
    return "\n".join(lines) if width(lines[1]) <= PHONE_COLUMNS else None  # [1]: the rule


def _line(cells: list[str], widths: list[int], align: Sequence[str]) -> str:
    padded: list[str] = []
    for column, size in enumerate(widths):
        text = cells[column] if column < len(cells) else ""
        gap = size - width(text)
        side = align[column] if column < len(align) else ""
        if side == "right":
            padded.append(" " * gap + text)
        elif side == "center":
            padded.append(" " * (gap // 2) + text + " " * (gap - gap // 2))
        else:
            padded.append(text + " " * gap)
    return " │ ".join(padded)


def _cards(table: Table, dialect: Dialect) -> list[str]:
    out: list[str] = []
    names = [plain_text(cell).strip() for cell in table.header]
    for number, row in enumerate(table.rows):
        if number:
            out.append("\n\n")
        for column, cell in enumerate(row):
            if column:
                out.append("\n")
                if column < len(names) and names[column]:
                    out.append(dialect.escape(f"{names[column]}: "))
                render_inline(cell, out, dialect)
            else:
                render_inline(cell, out, dialect, bold=True)
    return out
