"""Fenced code blocks (```lang ... ```) found line by line, without a full parse: the
splitter uses them to know whether a cut falls inside code, the renderer to know where
a blank line is safe to cut its cache at, and the outbox to close a partial answer.

:func:`unclosing` is for dialects whose clients end a code block at the first three
backticks anywhere (Discord, Slack's mrkdwn): no escape works inside their code blocks,
and they honour neither a longer fence nor tildes."""

from __future__ import annotations

import re
from dataclasses import dataclass

_OPEN = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^`\s]*)")
_CLOSE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*$")
_LANGUAGE = re.compile(r"^[\w+#.-]{1,32}$")
_TICKS = re.compile(r"`{3,}")
BREAK = "\u200b"
"""A zero-width space: what :func:`unclosing` puts between backticks (invisible)."""


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


def unclosing(code: str) -> str:
    """``code`` with no three backticks in a row, so that a client which closes a code
    block at the first three backticks anywhere shows it whole: every run of three or
    more gets a zero-width space after each pair (a line ```` ```sh ```` inside the
    block still reads ```` ```sh ````)."""
    return _TICKS.sub(lambda run: BREAK.join(_pairs(run[0])), code)


def _pairs(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(0, len(run), 2)]
