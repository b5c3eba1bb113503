"""Matrix's dialect: an event carries the Markdown as written in ``body`` (what a client
without HTML shows, and what a reply quotes) and, beside it, CommonMark rendered to the
HTML subset Matrix clients display (``formatted_body``, raw HTML escaped). The text is
the model's, so it reaches no further than the room: links only for http(s) and mailto
(others, and images, which a client might fetch, stay text), and every message and edit
says it mentions nobody (``m.mentions``: ``{}``), so ``@room``, a user id or a display
name in it notifies no one (the homeserver's push rules read ``m.mentions``).

An edit (``m.replace``) carries the new text twice (the fallback and ``m.new_content``),
so a part must fit an *edit* inside the homeserver's 64 KiB per event, with room left for
the envelope (ids, signatures, hashes) the homeserver adds. The kit's splitter cuts parts
of :data:`MESSAGE_UNITS`, which always fit as Markdown alone; one whose HTML beside it
would not fit goes without it (:func:`fitted`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from markdown_it import MarkdownIt

JSON = dict[str, Any]

EVENT_MAX_BYTES = 65_536
"""The spec's limit on a whole event (PDU), as JSON."""
CONTENT_MAX_BYTES = 56_000
"""Most bytes an edit's content may take: the envelope gets the rest (about 1 to 2 KiB
with signatures, hashes and auth events) with a wide margin."""
MESSAGE_UNITS = (CONTENT_MAX_BYTES - 2_000) // 6
"""The most one part holds, in UTF-16 code units: an edit carries its text twice, and no
unit takes more than three bytes of UTF-8, so such a part fits an edit as Markdown
alone (the rest of the content takes far less than the 2,000 bytes kept for it)."""

_SAFE_LINK = re.compile(r"^(?:https?://|mailto:)", re.IGNORECASE)


class _Markdown(MarkdownIt):
    def validateLink(self, url: str) -> bool:  # noqa: N802 - markdown-it's own name
        """Only http(s) and mailto links become links (the rest stay text)."""
        return bool(_SAFE_LINK.match(url))


_MD = (
    _Markdown("commonmark", {"html": False, "linkify": False, "breaks": True})
    .enable(["table", "strikethrough"])
    .disable("image")
)


class TooLargeError(Exception):
    """Even without its HTML, the content does not fit one event."""


def message(text: str, *, notice: bool = False, html: bool = True) -> JSON:
    """The content of a new message showing ``text`` (with its HTML, unless not
    ``html``)."""
    content: JSON = {"msgtype": "m.notice" if notice else "m.text", "body": text}
    if html:
        content["format"] = "org.matrix.custom.html"
        content["formatted_body"] = _MD.render(text).strip()
    content["m.mentions"] = {}
    return content


def edit(event_id: str, text: str, *, notice: bool = False, html: bool = True) -> JSON:
    """The content of an ``m.replace`` edit that makes ``event_id`` show ``text``."""
    new = message(text, notice=notice, html=html)
    content: JSON = {"msgtype": new["msgtype"], "body": f"* {text}"}
    if html:
        content["format"] = "org.matrix.custom.html"
        content["formatted_body"] = f"* {new['formatted_body']}"
    content["m.new_content"] = new
    content["m.mentions"] = {}
    content["m.relates_to"] = {"rel_type": "m.replace", "event_id": event_id}
    return content


def fitted(make: Callable[[bool], JSON], *, html: bool = True) -> JSON:
    """``make(html)``, with its HTML when that fits one event, else without; raises
    :class:`TooLargeError` when neither does."""
    for with_html in (True, False) if html else (False,):
        content = make(with_html)
        if len(json.dumps(content, ensure_ascii=False).encode()) <= CONTENT_MAX_BYTES:
            return content
    raise TooLargeError
