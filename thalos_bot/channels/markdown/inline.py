"""A paragraph's inline tokens (markdown-it), written in a transport's dialect.

The strictest transport's nesting rules shape the walk: a code span may be cut out of
the emphasis around it (closed before, reopened after) when the dialect says code may
not sit inside emphasis, and code inside a link is shown as the link's plain text.
Markup is opened lazily, only when there is text to put in it, so an empty ``**`` pair
or a heading made of one code span never leaves empty markup behind; and it always
nests properly, whatever order the Markdown closes it in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from markdown_it.token import Token

from thalos_bot.channels.markdown.dialect import Dialect, Style

_STYLE: dict[str, Style] = {"strong_open": "bold", "em_open": "italic", "s_open": "strike"}
_CLOSE: dict[str, Style] = {"strong_close": "bold", "em_close": "italic", "s_close": "strike"}
_EMPHASIS = frozenset(_STYLE.values())
_TASK = re.compile(r"^\[([ xX])\] ")


@dataclass(frozen=True, slots=True)
class _Tag:
    name: str
    opening: str
    closing: str


class _Writer:
    """Emits text under a wanted stack of markup, opening and closing it only as text
    needs it, so the output always nests properly."""

    def __init__(self, out: list[str], dialect: Dialect) -> None:
        self.out = out
        self.dialect = dialect
        self.opened: list[_Tag] = []

    def sync(self, styles: Sequence[_Tag]) -> None:
        wanted: list[_Tag] = []
        for tag in styles:  # bold inside bold (a bold cell in a bold title) is bold once
            if all(tag.name != other.name for other in wanted):
                wanted.append(tag)
        keep = 0
        while keep < len(self.opened) and keep < len(wanted) and self.opened[keep] == wanted[keep]:
            keep += 1
        for tag in reversed(self.opened[keep:]):
            self.out.append(tag.closing)
        del self.opened[keep:]
        for tag in wanted[keep:]:
            self.out.append(tag.opening)
            self.opened.append(tag)

    def text(self, text: str, wanted: Sequence[_Tag]) -> None:
        if text:
            self.sync(wanted)
            self.out.append(self.dialect.escape(text))

    def code(self, text: str, wanted: Sequence[_Tag]) -> None:
        if text:
            if self.dialect.code_in_emphasis:
                self.sync(wanted)
            else:
                self.sync([tag for tag in wanted if tag.name not in _EMPHASIS])
            self.out.append(self.dialect.code_span(text))


def _style(dialect: Dialect, style: Style) -> _Tag:
    opening, closing = dialect.style(style)
    return _Tag(style, opening, closing)


def is_task(children: Sequence[Token]) -> bool:
    """Does this inline run start with a task box, ``[ ]`` or ``[x]``?"""
    return bool(children) and children[0].type == "text" and bool(_TASK.match(children[0].content))


def render_inline(
    children: Sequence[Token],
    out: list[str],
    dialect: Dialect,
    *,
    bold: bool = False,
    task: bool = False,
) -> None:
    """Append one inline run to ``out`` (``bold``: a heading; ``task``: the start of a
    list item, where ``[ ]`` and ``[x]`` are check boxes)."""
    writer = _Writer(out, dialect)
    wanted: list[_Tag] = [_style(dialect, "bold")] if bold else []
    links: list[bool] = []  # per open link: did it open the dialect's link markup?
    first = task
    for token in children:
        kind = token.type
        if kind == "text":
            content = token.content
            if first and (box := _TASK.match(content)):
                content = ("☑ " if box.group(1) != " " else "☐ ") + content[box.end() :]
            writer.text(content, wanted)
        elif kind in {"softbreak", "hardbreak"}:
            writer.text("\n", wanted)
        elif kind in _STYLE:
            wanted.append(_style(dialect, _STYLE[kind]))
        elif kind in _CLOSE:
            _pop(wanted, _CLOSE[kind])
        elif kind == "code_inline":
            if any(links):
                writer.text(token.content, wanted)
            else:
                writer.code(token.content, wanted)
        elif kind == "link_open":
            href = str(token.attrGet("href") or "")
            markup = None if any(links) else dialect.link(href)
            links.append(markup is not None)
            if markup is not None:
                wanted.append(_Tag("link", *markup))
        elif kind == "link_close":
            if links.pop():
                _pop(wanted, "link")
        elif kind == "image":
            _image(token, writer, wanted, in_link=any(links))
        first = False
    writer.sync([])


def _image(token: Token, writer: _Writer, wanted: list[_Tag], *, in_link: bool) -> None:
    """An image cannot be shown inline: it becomes a link to it, labelled with its alt."""
    label = plain_text(token.children or []) or "image"
    src = str(token.attrGet("src") or "")
    markup = None if in_link else writer.dialect.link(src)
    if markup is None:
        writer.text(label, wanted)
        return
    writer.text(label, [*wanted, _Tag("link", *markup)])


def _pop(wanted: list[_Tag], name: str) -> None:
    for index in range(len(wanted) - 1, -1, -1):
        if wanted[index].name == name:
            del wanted[index]
            return


def plain_text(children: Sequence[Token]) -> str:
    """The visible text of an inline run, without any formatting (for a table cell)."""
    parts: list[str] = []
    for token in children:
        if token.type in {"text", "code_inline"}:
            parts.append(token.content)
        elif token.type in {"softbreak", "hardbreak"}:
            parts.append(" ")
        elif token.type == "image":
            parts.append(plain_text(token.children or []))
    return "".join(parts)
