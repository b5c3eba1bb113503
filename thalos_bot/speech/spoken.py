"""What is read aloud of a Markdown answer, and the clips it is read in.

:func:`spoken_text` keeps the prose: code blocks (fenced with ``` or ~~~, or indented)
become one sentence, :data:`CODE_SENTENCE`, said once per answer; a table likewise
becomes :data:`TABLE_SENTENCE`; a link is read by its text, a bare URL or an autolink
not at all, an image not at all; emphasis, heading and list markers are dropped. Each
heading, list item and paragraph ends as a sentence, so the voice pauses between them.

:func:`clips` cuts that text into pieces of at most ``limit`` characters: at sentence
ends first, then at commas, semicolons and colons, then between words. Only a single
word longer than the limit is cut inside (no engine limit is that short in practice).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token

CODE_SENTENCE = "The code is in the message."
TABLE_SENTENCE = "The table is in the message."

_PARSER = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]
)
_URL = re.compile(r"(?:\bhttps?://|\bwww\.)\S+", re.IGNORECASE)
_EMPTY_BRACKETS = re.compile(r"\(\s*\)|\[\s*\]|<\s*>")
_SPACE_BEFORE_MARK = re.compile(r"\s+([,.;:!?)\]])")
_WHITESPACE = re.compile(r"\s+")
_SENTENCE_END = ".!?…"
_CLOSERS = "\"'”’)]"

_SPLITTERS = (
    # after the end of a sentence (and any closing quote or bracket)
    re.compile(rf"(?<=[{_SENTENCE_END}])\s+|(?<=[{_SENTENCE_END}][{_CLOSERS}])\s+"),
    # after a clause
    re.compile(r"(?<=[,;:—–])\s+"),
    # between words
    re.compile(r"\s+"),
)


def spoken_text(markdown: str) -> str:
    """The words of ``markdown`` that are read aloud, as one line of sentences."""
    sentences: list[str] = []
    said: set[str] = set()
    table_depth = 0
    for token in _PARSER.parse(markdown):
        if token.type == "table_open":
            table_depth += 1
            _say_once(TABLE_SENTENCE, sentences, said)
        elif token.type == "table_close":
            table_depth -= 1
        elif table_depth:
            continue
        elif token.type in {"fence", "code_block"}:
            _say_once(CODE_SENTENCE, sentences, said)
        elif token.type == "inline":
            text = _tidy(_inline_text(token.children or []))
            if text:
                sentences.append(_as_sentence(text))
    return " ".join(sentences)


def clips(text: str, limit: int) -> list[str]:
    """``text`` in order, in pieces of at most ``limit`` characters, none empty; the
    pieces joined by single spaces give ``text`` with its whitespace collapsed."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    flat = _WHITESPACE.sub(" ", text).strip()
    if not flat:
        return []
    out: list[str] = []
    current = ""
    for piece in _pieces(flat, limit, 0):
        if not current:
            current = piece
        elif len(current) + 1 + len(piece) <= limit:
            current = f"{current} {piece}"
        else:
            out.append(current)
            current = piece
    out.append(current)
    return out


def _pieces(text: str, limit: int, level: int) -> list[str]:
    """``text`` split at the boundaries of ``level`` and finer, each part at most
    ``limit`` long (a part is only split further when it is too long)."""
    if len(text) <= limit:
        return [text]
    if level == len(_SPLITTERS):
        return [text[at : at + limit] for at in range(0, len(text), limit)]
    out: list[str] = []
    for part in _SPLITTERS[level].split(text):
        if part:
            out.extend(_pieces(part, limit, level + 1))
    return out


def _say_once(sentence: str, sentences: list[str], said: set[str]) -> None:
    if sentence not in said:
        said.add(sentence)
        sentences.append(sentence)


def _inline_text(children: Sequence[Token]) -> str:
    parts: list[str] = []
    skipping = 0
    for child in children:
        if child.type == "link_open" and child.markup == "autolink":
            skipping += 1
        elif child.type == "link_close" and skipping:
            skipping -= 1
        elif skipping:
            continue
        elif child.type in {"text", "code_inline"}:
            parts.append(child.content)
        elif child.type in {"softbreak", "hardbreak"}:
            parts.append(" ")
        # images, emphasis, strike-through and link markers say nothing
    return "".join(parts)


def _tidy(text: str) -> str:
    text = _URL.sub(" ", text)
    text = _EMPTY_BRACKETS.sub(" ", text)
    text = _WHITESPACE.sub(" ", text).strip()
    return _SPACE_BEFORE_MARK.sub(r"\1", text).strip(" ,;:")


def _as_sentence(text: str) -> str:
    """``text`` ending as a sentence does, so the voice pauses after a heading or an
    item of a list."""
    stripped = text.rstrip(_CLOSERS)
    if stripped and stripped[-1] in _SENTENCE_END:
        return text
    return f"{text}."
