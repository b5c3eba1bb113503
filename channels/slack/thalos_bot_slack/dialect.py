"""Slack's mrkdwn as a dialect of the kit's Markdown walk
(:mod:`thalos_bot.channels.markdown`).

mrkdwn is not Markdown: bold is ``*x*``, italic ``_x_``, strike ``~x~``, a link
``<url|text>``, a quote ``>`` at the start of a line; there are no headings or tables
(the walk makes headings bold lines and tables a grid or cards). ``&``, ``<`` and ``>``
are escaped everywhere, code included, or Slack reads them as its own markup
(``<!channel>`` would notify everyone). Only http(s) and mailto links become links.
Slack ends a code block at the first three backticks anywhere, so none are left in a
row inside one (:func:`~thalos_bot.channels.text.fences.unclosing`).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from functools import partial

from thalos_bot.channels.markdown.dialect import Style
from thalos_bot.channels.markdown.render import Renderer
from thalos_bot.channels.text.fences import BREAK, unclosing

_SAFE_URL = re.compile(r"^(https?://|mailto:)[^\s<>|]+$")
_MARKS: dict[Style, str] = {"bold": "*", "italic": "_", "strike": "~"}
_LINK = re.compile(r"<[^<>|]+\|([^<>]*)>")
escape = partial(html.escape, quote=False)  # &, < and > only, as Slack escapes them


@dataclass(frozen=True, slots=True)
class MrkdwnDialect:
    code_in_emphasis: bool = False
    rule: str = "———"

    def escape(self, text: str) -> str:
        return escape(text)

    def visible(self, rendered: str) -> str:
        text = _LINK.sub(r"\1", rendered).replace(BREAK, "")
        text = text.replace("```", "")
        text = re.sub(r"(?<!\w)[*_~`](?=\S)|(?<=\S)[*_~`](?!\w)", "", text)
        text = text.replace(_QUOTE_OPEN, "").replace(_QUOTE_CLOSE, "")
        return html.unescape(text)

    def style(self, style: Style) -> tuple[str, str]:
        return _MARKS[style], _MARKS[style]

    def link(self, url: str) -> tuple[str, str] | None:
        if not _SAFE_URL.match(url):
            return None
        return f"<{url}|", ">"

    def code_span(self, code: str) -> str:
        return f"`{escape(code)}`"

    def code_block(self, code: str, language: str | None) -> str:
        return f"```\n{unclosing(escape(code.rstrip(chr(10))))}\n```"

    def preformatted(self, text: str) -> str:
        return f"```\n{unclosing(escape(text))}\n```"

    def quote(self) -> tuple[str, str]:
        return _QUOTE_OPEN, _QUOTE_CLOSE


_QUOTE_OPEN, _QUOTE_CLOSE = "\x02", "\x03"
"""Around a quote while the walk writes it; every line of it then starts with ``>``."""
_QUOTED = re.compile("\x02(.*?)\x03", re.DOTALL)
RENDERER = Renderer(MrkdwnDialect())


def _quoted(match: re.Match[str]) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in match[1].split("\n"))


def to_mrkdwn(markdown: str) -> str:
    rendered = RENDERER.render(markdown)
    return _QUOTED.sub(_quoted, rendered).replace(_QUOTE_OPEN, "").replace(_QUOTE_CLOSE, "")
