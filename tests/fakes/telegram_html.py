"""Telegram's HTML parse mode, checked the way the Bot API checks it.

`parse_html(source)` returns the text a user sees plus the message entities Telegram
would attach (offsets and lengths in UTF-16 code units), or raises `HtmlError` with
the detail Telegram appends to "Bad Request: can't parse entities: ".

Supported, as documented for the Bot API: b strong i em u ins s strike del,
<span class="tg-spoiler">, tg-spoiler, a href, code, pre (with an inner
<code class="language-x">), blockquote (optionally expandable), tg-emoji; the named
entities &lt; &gt; &amp; &quot; and numeric ones. Everything else is refused, and so
is a bare "<" or "&" that does not start a tag or an entity (stricter than the server
for "&", which the documentation also says must be escaped). A bare ">" is accepted.

Nesting follows the documented rules: bold, italic, underline, strikethrough and
spoiler may contain and be part of anything except pre and code; a blockquote may not
hold another; nothing else may contain anything (so no code inside a link). Telegram
accepts such HTML but drops the offending inner entity; `ParsedText.dropped` lists
what it would drop, so a test can demand that nothing is.
"""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

Json = dict[str, Any]

_TAG_ENTITY = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "tg-spoiler": "spoiler",
    "span": "spoiler",
    "a": "text_link",
    "code": "code",
    "pre": "pre",
    "blockquote": "blockquote",
    "tg-emoji": "custom_emoji",
}
_NAMED_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}


class HtmlError(ValueError):
    """The HTML is not something Telegram accepts; the message is Telegram's detail."""


@dataclass(frozen=True)
class ParsedText:
    text: str
    entities: tuple[Json, ...]
    """What the reader sees formatted (after Telegram dropped badly nested entities)."""
    dropped: tuple[Json, ...] = ()
    """Entities Telegram would drop for breaking its nesting rules."""


_STYLES = frozenset({"bold", "italic", "underline", "strikethrough", "spoiler"})
_QUOTES = frozenset({"blockquote", "expandable_blockquote"})
_CODE = frozenset({"code", "pre"})


def _may_contain(outer: str, inner: str) -> bool:
    if outer in _CODE:
        return False
    if inner in _STYLES:
        return True
    if outer in _QUOTES:
        return inner not in _QUOTES
    if outer in _STYLES:
        return inner not in _CODE
    return False


def _nesting(entities: list[Json]) -> tuple[tuple[Json, ...], tuple[Json, ...]]:
    """Split ``entities`` (sorted outer first) into kept and dropped."""
    kept: list[Json] = []
    dropped: list[Json] = []
    for entity in entities:
        start, end = entity["offset"], entity["offset"] + entity["length"]
        outers = [
            other
            for other in kept
            if other["offset"] <= start and end <= other["offset"] + other["length"]
        ]
        if all(_may_contain(str(o["type"]), str(entity["type"])) for o in outers):
            kept.append(entity)
        else:
            dropped.append(entity)
    return tuple(kept), tuple(dropped)


@dataclass
class _Open:
    tag: str
    start: int
    entity: Json | None


def utf16_len(text: str) -> int:
    """Length as Telegram counts it: UTF-16 code units (an emoji outside the BMP is 2)."""
    return len(text.encode("utf-16-le")) // 2


def parse_html(source: str) -> ParsedText:
    parser = _TelegramHtml(source)
    parser.feed(source)
    parser.close()
    ordered = sorted(parser.entities, key=lambda d: (d[1]["offset"], -d[1]["length"], d[0]))
    kept, dropped = _nesting([entity for _, entity in ordered])
    return ParsedText("".join(parser.parts), kept, dropped)


class _TelegramHtml(HTMLParser):
    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=False)
        self._source = source
        self._line_starts = [0]
        for index, char in enumerate(source):
            if char == "\n":
                self._line_starts.append(index + 1)
        self._stack: list[_Open] = []
        self._length = 0  # visible text so far, in UTF-16 code units
        self.parts: list[str] = []
        self.entities: list[tuple[int, Json]] = []  # (nesting depth, entity)

    # -- positions -------------------------------------------------------------

    def _index(self) -> int:
        line, column = self.getpos()
        return self._line_starts[line - 1] + column

    def _byte_offset(self, index: int) -> int:
        return len(self._source[:index].encode("utf-8"))

    def _at(self, index: int | None = None) -> str:
        """'byte offset N' for the construct being handled (or for `index`)."""
        where = self._index() if index is None else index
        return f"byte offset {self._byte_offset(where)}"

    def _emit(self, text: str) -> None:
        self.parts.append(text)
        self._length += utf16_len(text)

    # -- tags ------------------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _TAG_ENTITY:
            raise HtmlError(f'Unsupported start tag "{tag}" at {self._at()}')
        attributes = {name: value or "" for name, value in attrs}
        entity: Json | None = {"type": _TAG_ENTITY[tag]}
        if tag == "span" and attributes.get("class") != "tg-spoiler":
            raise HtmlError(f'Tag "span" must have class "tg-spoiler" at {self._at()}')
        if tag == "a":
            href = attributes.get("href")
            entity = {"type": "text_link", "url": href} if href else None
        elif tag == "blockquote" and "expandable" in attributes:
            entity = {"type": "expandable_blockquote"}
        elif tag == "tg-emoji":
            entity = {"type": "custom_emoji", "custom_emoji_id": attributes.get("emoji-id", "")}
        elif tag == "code" and self._stack and self._stack[-1].tag == "pre":
            language = attributes.get("class", "")
            parent = self._stack[-1].entity
            if language.startswith("language-") and parent is not None:
                parent["language"] = language.removeprefix("language-")
                entity = None
        self._stack.append(_Open(tag, self._length, entity))

    def handle_endtag(self, tag: str) -> None:
        if not self._stack:
            raise HtmlError(f"Unexpected end tag at {self._at()}")
        opened = self._stack.pop()
        if opened.tag != tag:
            raise HtmlError(
                f'Unmatched end tag at {self._at()}, expected "</{opened.tag}>", found "</{tag}>"'
            )
        length = self._length - opened.start
        if opened.entity is not None and length > 0:
            entity = {**opened.entity, "offset": opened.start, "length": length}
            self.entities.append((len(self._stack), entity))

    # -- text ------------------------------------------------------------------

    def handle_data(self, data: str) -> None:
        start = self._index()
        for reserved in "<&":
            position = data.find(reserved)
            if position >= 0:
                if reserved == "<":
                    raise HtmlError(f"Unclosed start tag at {self._at(start + position)}")
                raise HtmlError(
                    f"Character '&' at {self._at(start + position)} does not start an HTML entity"
                )
        self._emit(data)

    def handle_entityref(self, name: str) -> None:
        end = self._index() + 1 + len(name)
        if name not in _NAMED_ENTITIES or self._source[end : end + 1] != ";":
            raise HtmlError(f'Unsupported HTML entity "&{name}" at {self._at()}')
        self._emit(_NAMED_ENTITIES[name])

    def handle_charref(self, name: str) -> None:
        end = self._index() + 2 + len(name)
        try:
            code = int(name[1:], 16) if name[:1] in {"x", "X"} else int(name)
            char = chr(code)
        except (ValueError, OverflowError):
            char = ""
        if not char or self._source[end : end + 1] != ";":
            raise HtmlError(f'Unsupported HTML entity "&#{name}" at {self._at()}')
        self._emit(char)

    def handle_comment(self, data: str) -> None:
        raise HtmlError(f'Unsupported start tag "!--" at {self._at()}')

    def handle_decl(self, decl: str) -> None:
        raise HtmlError(f'Unsupported start tag "!" at {self._at()}')

    def unknown_decl(self, data: str) -> None:
        raise HtmlError(f'Unsupported start tag "!" at {self._at()}')

    def handle_pi(self, data: str) -> None:
        raise HtmlError(f'Unsupported start tag "?" at {self._at()}')

    def close(self) -> None:
        super().close()
        if self._stack:
            raise HtmlError(
                f'Can\'t find end tag corresponding to start tag "{self._stack[-1].tag}"'
            )
