"""Keeping skill text from forging or closing the ``<skills>`` and ``<skill>`` blocks.

Skill bodies and descriptions are written by people, sometimes copied from elsewhere;
the blocks that carry them into a turn must end where *we* end them. So every spelling
of an opening bracket followed by ``skill`` is defused: ``<skill``, ``</skills>``,
``< / SKILL``, entity forms (``&lt;skill``, ``&#60;/skill``, ``&#x3C;skill``, doubly
encoded ``&amp;lt;skill``), escapes (``\\u003cskill``, ``%3Cskill``), look-alike brackets
(``＜skill``, ``﹤skill``, ``‹skill``, ``〈skill``), compatibility letters (``ｓｋｉｌｌ``,
``ſkill``) and invisible characters slipped in between (``<\\u200bskill``).

Detection runs on a per-character NFKD folding of the text, case-insensitively; only
the bracket of a match is replaced (by ``[``), so the rest of the text stays as written
and the result contains no match at all.
"""

from __future__ import annotations

import re
import unicodedata

REPLACEMENT = "["
"""What a defused bracket becomes: visible, and not a tag opener in any notation."""

_INVISIBLE = (
    r"[\u00ad\u0300-\u036f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f"
    r"\u202a-\u202e\u2060-\u2064\u206a-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]"
)
"""Characters that render as nothing (or as a mark on the previous letter)."""
_ENTITY_PREFIX = r"&(?:amp;)*"
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
_WORD = "".join(f"{letter}{_INVISIBLE}*" for letter in "skil") + "l"

_HOSTILE = re.compile(rf"(?P<bracket>{_BRACKET})(?:{_SEPARATOR})*{_WORD}", re.IGNORECASE)


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


def find_skill_markup(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` spans in ``text`` of the bracket of each hostile spelling."""
    folded, origin = _folded(text)
    spans: list[tuple[int, int]] = []
    for match in _HOSTILE.finditer(folded):
        start, end = match.span("bracket")
        spans.append((origin[start], origin[end] if end < len(origin) else len(text)))
    return spans


def escape_skill_markup(text: str) -> str:
    """``text`` with the bracket of every spelling of ``<skill`` / ``</skills`` replaced by
    :data:`REPLACEMENT`. Text without such a spelling comes back unchanged."""
    spans = find_skill_markup(text)
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
    return escape_skill_markup(escaped) if find_skill_markup(escaped) else escaped


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) made one space."""
    return " ".join(text.split())
