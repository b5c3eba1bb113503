"""Matrix's dialect: Markdown as ``org.matrix.custom.html``, split to fit one event.

An answer's Markdown goes out as ``body`` (the text as written: what a client without
HTML shows, and what a reply quotes) and ``formatted_body`` (CommonMark rendered to the
HTML subset Matrix clients display, raw HTML escaped). The text is the model's, so it
reaches no further than the room: links only for http(s) and mailto (others, and images,
which a client might fetch, stay text), and every message and edit says it mentions
nobody (``m.mentions``: ``{}``), so ``@room``, a user id or a display name in it notifies
no one (the homeserver's push rules read ``m.mentions`` rather than the text).

An edit (``m.replace``) carries the new text twice (the fallback and
``m.new_content``), so a part is cut to fit an *edit* inside the homeserver's 64 KiB per
event, with room left for the envelope (ids, signatures, hashes) the homeserver adds. A
cut inside a code fence closes the fence at the end of one part and opens it again at
the start of the next.
"""

from __future__ import annotations

import json
import re
from typing import Any

from markdown_it import MarkdownIt

JSON = dict[str, Any]

EVENT_MAX_BYTES = 65_536
"""The spec's limit on a whole event (PDU), as JSON."""
CONTENT_MAX_BYTES = 56_000
"""Most bytes an edit's content may take: the envelope gets the rest (about 1 to 2 KiB
with signatures, hashes and auth events) with a wide margin."""
MESSAGE_UNITS = CONTENT_MAX_BYTES // 2
"""No part is longer than this (an edit carries its text twice, as ``body`` and in
``m.new_content``), in UTF-8 bytes and so in UTF-16 code units too."""
PART_MAX_CHARS = 16_000
"""A first cut for long text, before the real size check (HTML can grow it)."""

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
NO_MENTIONS: JSON = {}
"""``m.mentions`` of everything the bot sends: nobody."""
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def to_html(text: str) -> str:
    html: str = _MD.render(text)
    return html.strip()


def message(text: str, *, notice: bool = False) -> JSON:
    """The content of a new message showing ``text``."""
    return {
        "msgtype": "m.notice" if notice else "m.text",
        "body": text,
        "format": "org.matrix.custom.html",
        "formatted_body": to_html(text),
        "m.mentions": dict(NO_MENTIONS),
    }


def edit(event_id: str, text: str, *, notice: bool = False) -> JSON:
    """The content of an ``m.replace`` edit that makes ``event_id`` show ``text``."""
    new = message(text, notice=notice)
    return {
        "msgtype": new["msgtype"],
        "body": f"* {text}",
        "format": "org.matrix.custom.html",
        "formatted_body": f"* {new['formatted_body']}",
        "m.new_content": new,
        "m.mentions": dict(NO_MENTIONS),
        "m.relates_to": {"rel_type": "m.replace", "event_id": event_id},
    }


def size(content: JSON) -> int:
    return len(json.dumps(content, ensure_ascii=False).encode())


def fits(text: str) -> bool:
    """Does an edit showing ``text`` fit in one event (with the envelope's margin)?"""
    placeholder = "$" + "x" * 43  # an event id's length on a v4+ room
    return size(edit(placeholder, text)) <= CONTENT_MAX_BYTES


def split(text: str) -> list[str]:
    """``text`` as parts that each fit an edit; one part when it fits whole."""
    if fits(text):
        return [text]
    parts: list[str] = []
    rest = text
    opener: str | None = None
    while rest:
        head = rest if opener is None else f"{opener}\n{rest}"
        if fits(head):
            parts.append(head)
            break
        cut = _cut(head)
        part, rest = head[:cut], head[cut:].lstrip("\n")
        fence = _open_fence(part)
        if fence is not None:
            part = part.rstrip("\n") + "\n" + fence[0]
            opener = fence[0] + fence[1]
        else:
            opener = None
        parts.append(part)
    return parts


def _cut(text: str) -> int:
    """Where to end the first part: the longest prefix that fits (leaving room to close
    a fence), at a paragraph break, else a line break, else a space, else anywhere."""
    low, high = 1, min(len(text), PART_MAX_CHARS * 2)
    while low < high:  # the longest prefix whose edit (plus a closing fence) fits
        mid = (low + high + 1) // 2
        if fits(text[:mid] + "\n~~~~~~~~~~"):
            low = mid
        else:
            high = mid - 1
    prefix = text[:low]
    for mark in ("\n\n", "\n", " "):
        at = prefix.rfind(mark)
        if at > low // 2:
            return at + len(mark)
    return low


def _open_fence(text: str) -> tuple[str, str] | None:
    """The fence (marker, info) still open at the end of ``text``, if one is."""
    open_fence: tuple[str, str] | None = None
    for line in text.splitlines():
        match = _FENCE.match(line)
        if match is None:
            continue
        marker, info = match.group(1), match.group(2)
        if open_fence is None:
            open_fence = (marker, info)
        elif (
            marker[0] == open_fence[0][0] and len(marker) >= len(open_fence[0]) and not info.strip()
        ):
            open_fence = None
    return open_fence
