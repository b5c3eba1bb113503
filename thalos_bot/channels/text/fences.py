"""Fenced code blocks (```lang ... ```) found line by line, without a full parse: the
splitter uses them to know whether a cut falls inside code, the renderer to know where
a blank line is safe to cut its cache at, and the outbox to close a partial answer."""

from __future__ import annotations

import re
from dataclasses import dataclass

_OPEN = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^`\s]*)")
_CLOSE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*$")
_LANGUAGE = re.compile(r"^[\w+#.-]{1,32}$")


@dataclass(frozen=True, slots=True)
class Fence:
    marker: str
    """The opening run of backticks or tildes."""
    info: str = ""
    """The language, if one was given."""

    @property
    def opening(self) -> str:
        """The line that reopens this fence in the next part: the marker and the
        language only (a long info string is not repeated at the top of every part)."""
        return self.marker + (self.language or "")

    @property
    def closing(self) -> str:
        return self.marker

    @property
    def language(self) -> str | None:
        return self.info if _LANGUAGE.match(self.info) else None


def opens(line: str) -> Fence | None:
    match = _OPEN.match(line)
    return Fence(match.group(1), match.group(2)) if match else None


def closes(line: str, fence: Fence) -> bool:
    match = _CLOSE.match(line)
    if match is None:
        return False
    marker = match.group(1)
    return marker[0] == fence.marker[0] and len(marker) >= len(fence.marker)


def scan(text: str, fence: Fence | None = None) -> Fence | None:
    """The fence open at the end of ``text``, given the one open at its start."""
    for line in text.split("\n"):
        if fence is None:
            fence = opens(line)
        elif closes(line, fence):
            fence = None
    return fence
