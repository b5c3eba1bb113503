"""A Slack message's text, as the model should read it.

Slack escapes ``&``, ``<`` and ``>`` and writes its own markup in angle brackets: a user
``<@U123>``, a channel ``<#C123|general>``, a link ``<https://x|label>``, a special
mention ``<!here>``. The bot's own mention is dropped (it only addresses the bot); the
rest become plain words. Commands typed as text (``!new``, or ``/new`` when the client
let it through) become the pump's ``/new``.
"""

from __future__ import annotations

import re

from thalos_bot.channels.notices import COMMAND_NAMES
from thalos_bot_slack.dialect import unescape

_MARKUP = re.compile(r"<([^<>]+)>")
_TYPED_COMMAND = re.compile(r"^\s*[!/]([A-Za-z]+)(?=\s|$)")


def _markup(match: re.Match[str]) -> str:
    inner = match[1]
    target, _, label = inner.partition("|")
    if target.startswith("@"):
        return f"@{label or target[1:]}"
    if target.startswith("#"):
        return f"#{label or target[1:]}"
    if target.startswith("!"):
        return f"@{label or target[1:].split('^')[0]}"
    return f"{label} ({target})" if label and label != target else target


def plain(text: str, bot_user: str = "") -> str:
    if bot_user:
        text = text.replace(f"<@{bot_user}>", "")
    text = _MARKUP.sub(_markup, text)
    text = unescape(text)
    text = re.sub(r"[ \t]{2,}", " ", text)
    return text.strip()


def as_command(text: str) -> str:
    """``!new 2`` → ``/new 2`` when it names one of the six commands; else ``text``."""
    match = _TYPED_COMMAND.match(text)
    if match is None or match[1].lower() not in COMMAND_NAMES:
        return text
    return "/" + text.strip()[1:]
