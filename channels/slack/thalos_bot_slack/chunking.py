"""Splitting an answer into messages under Slack's limits.

Slack takes at most 40,000 characters of ``text`` (and advises 4,000, past which it may
cut a message off in some clients) and 12,000 of ``markdown_text``. An answer is split
on the Markdown source, at the last paragraph break, else line break, else space before
the limit; a split inside a fenced code block closes the fence at the end of the part and
opens it again at the start of the next, so each message renders on its own.
"""

from __future__ import annotations

import re

TEXT_PART = 3_900
"""Characters of Markdown source per mrkdwn message (``text``)."""
MARKDOWN_PART = 11_500
"""Characters per ``markdown_text`` message (12,000 allowed; room for a reopened fence)."""
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")


def _open_fence(text: str) -> str | None:
    """The fence line still open at the end of ``text``, if any."""
    fence: str | None = None
    marker = ""
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if not match:
            continue
        if fence is None:
            fence, marker = line.strip(), match[1]
        elif match[1].startswith(marker[0]) and len(match[1]) >= len(marker) and not match[2]:
            fence = None
    return fence


def _cut_at(text: str, limit: int) -> int:
    window = text[:limit]
    for sep in ("\n\n", "\n", " "):
        at = window.rfind(sep)
        if at > limit // 3:
            return at + len(sep)
    return limit


def split(text: str, limit: int) -> list[str]:
    """``text`` in parts of at most ``limit`` characters (none empty)."""
    parts: list[str] = []
    rest = text
    reopen = ""
    while rest:
        rest = reopen + rest
        if len(rest) <= limit:
            parts.append(rest)
            break
        room = limit - 4  # for a closing fence
        cut = _cut_at(rest, room)
        part = rest[:cut]
        fence = _open_fence(part)
        tail = rest[cut:]
        closing = re.match(r"[ \t]*(`{3,}|~{3,})[ \t]*(\n|$)", tail)
        if fence is not None and closing is not None:
            fence, tail = None, tail[closing.end() :]  # the fence closes right here
            part = part.rstrip("\n") + "\n" + closing[1]
        if fence is not None:
            part = part.rstrip("\n") + "\n```"
            reopen = fence + "\n"
        else:
            reopen = ""
        parts.append(part.rstrip() or part)
        rest = tail.lstrip("\n") if fence is None else tail
    return [p for p in parts if p.strip()]
