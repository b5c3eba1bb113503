"""Mention gating in groups: a group message is for the bot only when it is addressed
to it, and the mention is taken out of what the model reads.

The transport decodes what its platform marks (Telegram: ``mention`` and
``text_mention`` entities, a reply's author, ``/cmd@bot``; Matrix: ``m.mentions``, the
display-name pill, ``m.in_reply_to``) into a :class:`Addressing`; the rule and the
stripping are shared.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

_PUNCTUATION = frozenset(",.;:!?)")
"""What follows a removed mention with no space before it ("Hello @bot, how": "Hello,")."""


@dataclass(frozen=True, slots=True)
class Addressing:
    """What a group message says about whom it is for."""

    replies_to_bot: bool = False
    """It replies to one of the bot's messages."""
    mentions: Sequence[tuple[int, int]] = ()
    """Spans (Python string offsets) of the text that name the bot."""
    command_for: str | None = None
    """The bot a command names (``/new@name``), if it names one."""


def addressed(addressing: Addressing, bot_name: str | None) -> bool:
    """Is the message for the bot (``bot_name``: its handle, once known)?"""
    if addressing.replies_to_bot or addressing.mentions:
        return True
    command_for = addressing.command_for
    return (
        bot_name is not None
        and command_for is not None
        and (command_for.lower() == bot_name.lower())
    )


def strip_spans(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` without the ``spans`` (the mentions of the bot), the words around them
    kept and joined with one space (none before punctuation or after a line break)."""
    ordered = sorted(spans)
    if not ordered:
        return text
    pieces: list[str] = []
    last = 0
    for start, end in ordered:
        pieces.append(text[last:start])
        last = end
    pieces.append(text[last:])
    joined = pieces[0]
    for piece in pieces[1:]:
        left, right = joined.rstrip(" "), piece.lstrip(" ")
        spaced = left and right and not left.endswith("\n") and right[0] not in _PUNCTUATION
        joined = f"{left} {right}" if spaced else left + right
    return joined.strip()
