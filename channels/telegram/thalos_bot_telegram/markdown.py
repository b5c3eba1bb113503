"""The model's Markdown, as Telegram HTML: the kit's walk
(:mod:`thalos_bot.channels.markdown`) with Telegram's rules.

Telegram's HTML subset: ``<b> <i> <s> <code> <pre> <blockquote> <a>``; nothing may sit
inside ``code`` or ``pre`` and code may not sit inside emphasis (the walk cuts a code
span out of the emphasis around it); links open only for ``http(s)://`` and
``mailto:``. Not ``tg://``: the text is the model's, and such a link acts inside the
client (``tg://user?id=`` mentions and notifies anyone, ``tg://proxy`` offers to route
the app through another server, ``tg://join`` joins a chat). Telegram's own check has the
last word: a part it refuses is sent as plain text instead (by the sender).
"""

from __future__ import annotations

import re

from thalos_bot.channels.markdown.html import HtmlDialect
from thalos_bot.channels.markdown.render import Renderer

DIALECT = HtmlDialect(
    safe_url=re.compile(r"^(?:https?://|mailto:)[^\s\"<>]+$", re.IGNORECASE),
    code_in_emphasis=False,
)
_RENDERER = Renderer(DIALECT)


def to_html(source: str) -> str:
    """``source`` (the model's Markdown) as HTML Telegram accepts."""
    return _RENDERER.render(source)


def clear_cache() -> None:
    """Forget rendered blocks (for benchmarks that measure a cold render)."""
    _RENDERER.clear_cache()
