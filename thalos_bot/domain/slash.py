"""What counts as a command word, for every channel.

Only a leading token shaped like a Telegram command is one: ``/``, then 1 to 32 ASCII
letters, digits or underscores, optionally ``@botname``, then whitespace or the end.
``/etc/hosts looks wrong``, ``/usr/bin/env`` and ``/ 2`` are not commands: they are
text for the model. A leading ``//`` escapes the rest: ``//new`` reaches the model as
``/new``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_WORD = re.compile(r"/(?P<name>[A-Za-z0-9_]{1,32})(?:@(?P<bot>[A-Za-z0-9_]{1,64}))?(?=\s|$)")


@dataclass(frozen=True, slots=True)
class SlashWord:
    name: str
    """The command name, lower-case, without ``/`` or ``@botname``."""
    bot: str | None
    """The ``@botname`` it was addressed to, if any (as typed, without ``@``)."""
    word: str
    """The token as typed."""
    rest: str
    """What follows the token, stripped."""


def command_word(text: str) -> SlashWord | None:
    """The leading command token of ``text``, or None when ``text`` is not a command."""
    stripped = text.strip()
    match = _WORD.match(stripped)
    if match is None:
        return None
    return SlashWord(
        match["name"].lower(), match["bot"], match.group(), stripped[match.end() :].strip()
    )


def unescaped(text: str) -> str:
    """``text`` as the model should read it: a leading ``//`` loses one slash."""
    stripped = text.lstrip()
    if stripped.startswith("//"):
        return stripped[1:]
    return text
