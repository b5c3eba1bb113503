"""The delimited blocks we write into a model's context, and the one rule for text in them.

A block is XML-shaped, ``<tag attr="…">`` … ``</tag>``: the recalled ``memories``, the
``skills`` catalogue, a loaded ``skill`` with its ``skill_resources``, a ``skill_file``
read from a skill's folder, the ``quote`` of a message replied to. Their text is written
by people (skill authors, users, the model itself), so it must never end a block where
*we* did not, nor open one of ours: a skill description holding ``</memories>`` must not
close the memories block, and a memory holding ``<skill name="x">`` must not forge a skill.

The rule: every piece of text placed in any block passes through :func:`defuse`, which
breaks every spelling of an opening bracket followed by the name of **any** registered
tag, not only the block's own. Spellings covered: ``<memories``, ``</skill``,
``< / SKILLS``, entity forms (``&lt;``, ``&#60;``, ``&#x3C;``, doubly encoded
``&amp;lt;``), escapes (``\\u003c``, ``%3C``), look-alike brackets (``＜``, ``‹``, ``〈``),
compatibility letters (``ｓｋｉｌｌ``, ``ſkill``) and invisible characters slipped in
between (``<\\u200bskill``). Detection runs on a per-character NFKD folding of the text,
case-insensitively, and matches the tag name as a prefix (``<skillset`` is defused too);
only the bracket of a match is replaced (by ``[``), so the rest reads as written.

The registry is :class:`BlockTag`. :func:`render_block` builds a block only for a
registered tag, so a new kind of block cannot exist without every other block's text
being defused against it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from enum import StrEnum


class BlockTag(StrEnum):
    """Every tag name a block we build may use. Add a member to add a block."""

    MEMORIES = "memories"
    SKILLS = "skills"
    SKILL = "skill"
    SKILL_RESOURCES = "skill_resources"
    SKILL_FILE = "skill_file"
    QUOTE = "quote"


REPLACEMENT = "["
"""What a defused bracket becomes: visible, and not a tag opener in any notation."""

_INVISIBLE = (
    r"[\u00ad\u0300-\u036f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f"
    r"\u202a-\u202e\u2060-\u2064\u206a-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]"
)
"""Characters that render as nothing (or as a mark on the previous letter)."""
_ENTITY_PREFIX = r"&(?:amp;|#0*38;|#x0*26;)*"
_BRACKET = (
    r"(?:<"
    r"|[\u2039\u2329\u27e8\u3008\u276c\u276e\u29fc\u02c2\u1438\u16b2]"
    rf"|{_ENTITY_PREFIX}(?:lt;?|#0*60;?|#x0*3c;?)"
    r"|\\+(?:u0*3c|x0*3c|0*74)"
    r"|%(?:25)*3c)"
)
_SEPARATOR = (
    rf"(?:\s|{_INVISIBLE}|[/\\\u2044\u2215\u29f8]"
    rf"|{_ENTITY_PREFIX}(?:sol;?|#0*47;?|#x0*2f;?)|%(?:25)*2f)"
)


def _spelled(name: str) -> str:
    """``name`` as a pattern that tolerates invisible characters between its letters."""
    return f"{_INVISIBLE}*".join(re.escape(letter) for letter in name)


def _hostile_pattern(names: Iterable[str]) -> re.Pattern[str]:
    words = "|".join(_spelled(n) for n in sorted(set(names), key=len, reverse=True))
    return re.compile(rf"(?P<bracket>{_BRACKET})(?:{_SEPARATOR})*(?:{words})", re.IGNORECASE)


_HOSTILE = _hostile_pattern(tag.value for tag in BlockTag)


def _folded(text: str) -> tuple[str, list[int]]:
    """``text`` with each character NFKD-normalised on its own, and for each position of
    the result the index of the character it came from (plus a final end index)."""
    if text.isascii():
        return text, list(range(len(text) + 1))
    pieces: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        folded = char if char.isascii() else unicodedata.normalize("NFKD", char)
        pieces.append(folded)
        origin.extend([index] * len(folded))
    origin.append(len(text))
    return "".join(pieces), origin


def find_markup(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` spans in ``text`` of the bracket of each spelling of an
    opening or closing tag of any :class:`BlockTag`."""
    folded, origin = _folded(text)
    spans: list[tuple[int, int]] = []
    for match in _HOSTILE.finditer(folded):
        start, end = match.span("bracket")
        spans.append((origin[start], origin[end] if end < len(origin) else len(text)))
    return spans


def defuse(text: str) -> str:
    """``text`` with the bracket of every spelling of a registered tag replaced by
    :data:`REPLACEMENT`. Text without such a spelling comes back unchanged; the result
    never contains one (see :func:`find_markup`)."""
    spans = find_markup(text)
    if not spans:
        return text
    out: list[str] = []
    last = 0
    for start, end in spans:
        out.append(text[last:start])
        out.append(REPLACEMENT)
        last = max(end, start + 1)
    out.append(text[last:])
    escaped = "".join(out)
    # A defused bracket can expose no new one (the replacement completes no pattern),
    # but a second pass makes that a guarantee rather than an argument.
    return defuse(escaped) if find_markup(escaped) else escaped


class Block(str):
    """Text of a block :func:`render_block` built. Placed inside another block it is kept
    as it is (a block nests); any other ``str`` is defused."""

    __slots__ = ()


_ATTRIBUTE_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
_ATTRIBUTE_TEXT = str.maketrans(
    {"&": "&amp;", '"': "&quot;", "<": "&lt;", ">": "&gt;", "\n": " ", "\r": " ", "\t": " "}
)


def opening(tag: BlockTag, attributes: Mapping[str, str] | None = None) -> str:
    """``<tag a="v">``: each value defused, then quoted as XML attribute text."""
    if not isinstance(tag, BlockTag):
        raise TypeError(f"{tag!r} is not a registered block tag")
    parts = [tag.value]
    for key, value in (attributes or {}).items():
        if not _ATTRIBUTE_NAME.match(key):
            raise ValueError(f"{key!r} is not an attribute name")
        parts.append(f'{key}="{defuse(value).translate(_ATTRIBUTE_TEXT)}"')
    return "<" + " ".join(parts) + ">"


def closing(tag: BlockTag) -> str:
    """``</tag>``."""
    if not isinstance(tag, BlockTag):
        raise TypeError(f"{tag!r} is not a registered block tag")
    return f"</{tag.value}>"


def render_block(
    tag: BlockTag, lines: Iterable[str], attributes: Mapping[str, str] | None = None
) -> Block:
    """``<tag …>``, then ``lines`` one per line (each :class:`Block` as it is, any other
    text defused), then ``</tag>``."""
    body = "\n".join(line if isinstance(line, Block) else defuse(line) for line in lines)
    return Block(f"{opening(tag, attributes)}\n{body}\n{closing(tag)}")
