"""Splitting a rendered answer into messages of at most 2,000 characters.

A cut goes at the last paragraph break that fits, else the last line break, else the
last space, else mid-word. A code fence open at a cut is closed at the end of that
part and opened again (with its info string) at the start of the next, so that every
part renders on its own.
"""

from __future__ import annotations

import re

LIMIT = 2000
"""Discord's limit on a message's ``content``, in characters."""
FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")


def _open_fence(text: str) -> str | None:
    """The opening line of the fence still open at the end of ``text`` (None: none)."""
    open_line: str | None = None
    marker = ""
    for line in text.split("\n"):
        found = FENCE.match(line)
        if not found:
            continue
        if open_line is None:
            open_line, marker = line.strip(), found.group(1)
        elif (
            found.group(1)[0] == marker[0]
            and len(found.group(1)) >= len(marker)
            and not found.group(2).strip()
        ):
            open_line = None
    return open_line


def _cut_at(text: str, room: int) -> int:
    window = text[:room]
    for sep in ("\n\n", "\n", " "):
        at = window.rfind(sep)
        if at > room // 4:
            return at + len(sep)
    return room


def split(text: str, limit: int = LIMIT) -> list[str]:
    """``text`` as parts of at most ``limit`` characters (none empty)."""
    parts: list[str] = []
    rest = text
    prefix = ""
    while rest:
        body = prefix + rest
        if len(body) <= limit:
            parts.append(body)
            break
        # Room for a closing fence should one be open at the cut.
        room = limit - 4
        cut = _cut_at(body, room)
        head = body[:cut]
        fence = _open_fence(head)
        if fence is not None:
            head = head.rstrip("\n") + "\n```"
        parts.append(head)
        consumed = cut - len(prefix)
        rest = rest[max(consumed, 1) :]
        prefix = fence + "\n" if fence is not None else ""
        if len(prefix) > limit // 2:
            prefix = "```\n"
    return [p for p in parts if p.strip()] or ([text[:limit]] if text else [])
