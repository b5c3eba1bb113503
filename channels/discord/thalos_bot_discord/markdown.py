"""The model's Markdown in Discord's dialect.

Discord renders most of CommonMark as it is (emphasis, code spans and fences, block
quotes, lists, masked links, headings ``#`` to ``###``), so text passes through with
three changes outside code fences: a pipe table, which Discord shows as raw pipes,
becomes a code block with its columns aligned (the kit's grid,
:func:`~thalos_bot.channels.markdown.tables.grid`); a heading of four or more ``#`` (shown
raw) becomes a bold line; a thematic break (``---``) becomes a line of box-drawing
characters.

Code blocks are redrawn for Discord's client, which ends one at the first three
backticks anywhere (even mid-line, or a ```` ```sh ```` line that CommonMark reads as
code) and knows no longer fence and no ``~~~``: each is opened with three backticks
and its language, its lines keep no three backticks in a row
(:func:`~thalos_bot.channels.text.fences.unclosing`), and one left open at the end is
closed.
"""

from __future__ import annotations

import re

from thalos_bot.channels.markdown.tables import grid
from thalos_bot.channels.text.fences import Fence, closes, opens, unclosing

TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$")
DEEP_HEADING = re.compile(r"^\s{0,3}#{4,6}\s+(.*?)\s*#*\s*$")
BREAK = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
RULE = "─" * 20


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner.removeprefix("|").removesuffix("|")
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", inner)]


def to_discord(text: str) -> str:
    """``text`` (the model's Markdown) as Discord shows it best."""
    lines = text.split("\n")
    out: list[str] = []
    fence: Fence | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if fence is not None:  # code is shown as it is
            fence = None if closes(line, fence) else fence
            out.append("```" if fence is None else unclosing(line))
        elif (fence := opens(line)) is not None:
            out.append("```" + (fence.language or ""))
        elif (
            "|" in line
            and i + 1 < len(lines)
            and TABLE_SEPARATOR.match(lines[i + 1])
            and "|" in lines[i + 1]
        ):
            rows = [_cells(line)]
            i += 2
            while i < len(lines) and "|" in lines[i] and lines[i].strip():
                rows.append(_cells(lines[i]))
                i += 1
            out.extend(["```", *(unclosing(row) for row in grid(rows[0], rows[1:])), "```"])
            continue
        elif heading := DEEP_HEADING.match(line):
            out.append(f"**{heading.group(1)}**")
        elif BREAK.match(line):
            out.append(RULE)
        else:
            out.append(line)
        i += 1
    if fence is not None:  # CommonMark ends it with the text; Discord would show it raw
        out.append("```")
    return "\n".join(out)
