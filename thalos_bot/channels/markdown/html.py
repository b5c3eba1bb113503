"""The emitter for HTML dialects: Telegram's HTML subset, Matrix's ``formatted_body``.

:class:`HtmlDialect` writes ``<b>``, ``<i>``, ``<s>``, ``<code>``, ``<pre>``,
``<blockquote>`` and ``<a href>``; a transport gives it the link schemes its clients
open sensibly and whether code may sit inside emphasis. Text is escaped (``&``, ``<``,
``>``; quotes may stay), so HTML in the answer is shown, never interpreted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape as _escape
from html import unescape

from thalos_bot.channels.markdown.dialect import Style

_TAG = re.compile(r"<[^>]*>")
_TAGS: dict[Style, str] = {"bold": "b", "italic": "i", "strike": "s"}


def escape(text: str) -> str:
    """Escape text for HTML (``&``, ``<``, ``>``; quotes may stay)."""
    return _escape(text, quote=False)


def visible(html: str) -> str:
    """The text a reader sees of HTML this module wrote (tags dropped, entities decoded)."""
    return unescape(_TAG.sub("", html))


@dataclass(frozen=True, slots=True)
class HtmlDialect:
    safe_url: re.Pattern[str]
    """The links a client of the transport opens sensibly (others become plain text)."""
    code_in_emphasis: bool = False
    rule: str = "———"

    def escape(self, text: str) -> str:
        return escape(text)

    def visible(self, rendered: str) -> str:
        return visible(rendered)

    def style(self, style: Style) -> tuple[str, str]:
        tag = _TAGS[style]
        return f"<{tag}>", f"</{tag}>"

    def link(self, url: str) -> tuple[str, str] | None:
        if not self.safe_url.match(url):
            return None
        return f'<a href="{_escape(url, quote=True)}">', "</a>"

    def code_span(self, code: str) -> str:
        return f"<code>{escape(code)}</code>"

    def code_block(self, code: str, language: str | None) -> str:
        if language:
            return f'<pre><code class="language-{escape(language)}">{escape(code)}</code></pre>'
        return f"<pre>{escape(code)}</pre>"

    def preformatted(self, text: str) -> str:
        return f"<pre>{escape(text)}</pre>"

    def quote(self) -> tuple[str, str]:
        return "<blockquote>", "</blockquote>"
