"""How Discord's client shows a message's Markdown: the visible text and its styles.

Discord formats ``content`` itself: code blocks (```), inline code, masked links
``[text](url)``, ``**bold**``, ``__underline__``, ``*italic*`` / ``_italic_``,
``~~strike~~``, and headings ``#`` to ``###`` (bold). Markers inside code are text. A
backslash escapes a marker.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Styles = set[str]

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("link", re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")),
    ("bold", re.compile(r"\*\*(.+?)\*\*", re.S)),
    ("underline", re.compile(r"__(.+?)__", re.S)),
    (
        "italic",
        re.compile(
            r"(?<![*\w])\*(?!\s)(.+?)(?<!\s)\*(?!\*)|(?<![_\w])_(?!\s)(.+?)(?<!\s)_(?![_\w])", re.S
        ),
    ),
    ("strike", re.compile(r"~~(.+?)~~", re.S)),
]
_FENCE = re.compile(r"```(?:[\w+-]*\n)?(.*?)```", re.S)
_CODE = re.compile(r"`([^`\n]+)`")
_HEADING = re.compile(r"^#{1,3} (.+)$", re.M)


def shown(content: str) -> tuple[str, frozenset[str]]:
    """``content`` as a person sees it: its text without markers, and the styles used."""
    styles: Styles = set()
    protected: list[str] = []

    def protect(style: str) -> Callable[[re.Match[str]], str]:
        def replace(found: re.Match[str]) -> str:
            styles.add(style)
            protected.append(found.group(1).rstrip("\n") if style == "pre" else found.group(1))
            return f"\x00{len(protected) - 1}\x00"

        return replace

    text = _FENCE.sub(protect("pre"), content)
    text = _CODE.sub(protect("code"), text)
    if _HEADING.search(text):
        styles.add("bold")
        text = _HEADING.sub(r"\1", text)
    for style, pattern in _PATTERNS:

        def strip(found: re.Match[str], style: str = style) -> str:
            styles.add(style)
            return (
                next(g for g in found.groups() if g is not None)
                if style != "link"
                else found.group(1)
            )

        text = pattern.sub(strip, text)
    text = re.sub(r"\\([*_~`\\|\[\]()#>-])", r"\1", text)
    text = re.sub(r"\x00(\d+)\x00", lambda m: protected[int(m.group(1))], text)
    return text, frozenset(styles)
