"""A paragraph's inline tokens (markdown-it) as Telegram HTML.

Telegram's nesting rules shape the output: bold, italic, underline, strikethrough and
spoiler may nest in anything except ``code`` and ``pre``, and nothing else may contain
anything — so a code span is cut out of the emphasis around it (closed before, reopened
after), and code inside a link is shown as the link's plain text. Tags are opened
lazily, only when there is text to put in them, so an empty ``**`` pair or a heading
made of one code span never leaves an empty tag behind.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape as _escape
from html import unescape

from markdown_it.token import Token

_SAFE_URL = re.compile(r"^(?:https?://|tg://|mailto:)[^\s\"<>]+$", re.IGNORECASE)
_EMPHASIS = frozenset({"b", "i", "s", "u"})
_STYLE = {"strong_open": "b", "em_open": "i", "s_open": "s"}
_CLOSE = frozenset({"strong_close", "em_close", "s_close"})
_TASK = re.compile(r"^\[([ xX])\] ")
_TAG = re.compile(r"<[^>]*>")


def escape(text: str) -> str:
    """Escape text for Telegram HTML (``&``, ``<``, ``>``; quotes may stay)."""
    return _escape(text, quote=False)


_WEIGHTS = (
    ("[", 4),
    ("<", 2),
    *((marker, 1) for marker in "`*_~&\\"),
    ("\n", 1),  # a flood of tiny lines: each line costs a round of block rules
)
_FLOOD = 0.35


def marker_flood(text: str) -> bool:
    """Is ``text`` a flood of inline markers (``[[[[``, ``` `a`*`a`* ```) rather than
    prose? The parser's cost per marker is high — brackets most — so such a block is
    shown as the text it is (mostly what CommonMark shows anyway) and rendering stays
    within a few milliseconds per 4 KB whatever the input. Real answers weigh in far
    below the threshold (at most 0.15 across the test corpus)."""
    if len(text) < 256:
        return False
    weight = sum(text.count(marker) * cost for marker, cost in _WEIGHTS)
    return weight > _FLOOD * len(text)


def visible(html: str) -> str:
    """The text a reader sees of HTML this module wrote (tags dropped, entities decoded)."""
    return unescape(_TAG.sub("", html))


def safe_url(url: str) -> bool:
    """Only links a Telegram client opens sensibly: web, tg:// and mailto."""
    return bool(_SAFE_URL.match(url))


@dataclass(frozen=True, slots=True)
class _Tag:
    name: str
    attrs: str = ""

    @property
    def opening(self) -> str:
        return f"<{self.name}{self.attrs}>"

    @property
    def closing(self) -> str:
        return f"</{self.name}>"


class _Writer:
    """Emits text under a wanted stack of tags, opening and closing tags only as text
    needs them, so the output always nests properly."""

    def __init__(self, out: list[str]) -> None:
        self.out = out
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
            self.out.append(escape(text))

    def code(self, text: str, wanted: Sequence[_Tag]) -> None:
        if text:
            self.sync([tag for tag in wanted if tag.name not in _EMPHASIS])
            self.out.append(f"<code>{escape(text)}</code>")


def is_task(children: Sequence[Token]) -> bool:
    """Does this inline run start with a task box, ``[ ]`` or ``[x]``?"""
    return bool(children) and children[0].type == "text" and bool(_TASK.match(children[0].content))


def render_inline(
    children: Sequence[Token], out: list[str], *, bold: bool = False, task: bool = False
) -> None:
    """Append the HTML of one inline run to ``out`` (``bold``: a heading; ``task``: the
    start of a list item, where ``[ ]`` and ``[x]`` are check boxes)."""
    writer = _Writer(out)
    wanted: list[_Tag] = [_Tag("b")] if bold else []
    links: list[bool] = []  # per open link: did it open an <a>?
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
            wanted.append(_Tag(_STYLE[kind]))
        elif kind in _CLOSE:
            _pop(wanted, {"strong_close": "b", "em_close": "i", "s_close": "s"}[kind])
        elif kind == "code_inline":
            if any(links):
                writer.text(token.content, wanted)
            else:
                writer.code(token.content, wanted)
        elif kind == "link_open":
            href = str(token.attrGet("href") or "")
            opens = safe_url(href) and not any(links)
            links.append(opens)
            if opens:
                wanted.append(_Tag("a", f' href="{_escape(href, quote=True)}"'))
        elif kind == "link_close":
            if links.pop():
                _pop(wanted, "a")
        elif kind == "image":
            _image(token, writer, wanted, in_link=any(links))
        first = False
    writer.sync([])


def _image(token: Token, writer: _Writer, wanted: list[_Tag], *, in_link: bool) -> None:
    """An image cannot be shown inline: it becomes a link to it, labelled with its alt."""
    label = plain_text(token.children or []) or "image"
    src = str(token.attrGet("src") or "")
    if in_link or not safe_url(src):
        writer.text(label, wanted)
        return
    writer.text(label, [*wanted, _Tag("a", f' href="{_escape(src, quote=True)}"')])


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
