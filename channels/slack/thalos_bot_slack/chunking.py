"""Splitting an answer into messages under Slack's limits, with the kit's splitter
(:mod:`thalos_bot.channels.text.split`: fences, tables and emphasis closed at each cut
and reopened in the next part).

Slack takes at most 40,000 characters of ``text`` (and advises 4,000, past which some
clients cut a message off) and 12,000 of ``markdown_text``. The limit applies to the
Markdown of each part; its mrkdwn may be a little longer (``&amp;``, ``<url|label>``),
far inside the 40,000.
"""

from __future__ import annotations

from thalos_bot.channels.text.split import split as kit_split

TEXT_PART = 3_900
"""Characters of Markdown per mrkdwn message (``text``)."""
MARKDOWN_PART = 11_500
"""Characters per ``markdown_text`` message (12,000 allowed; room for what is reopened)."""


def split(text: str, limit: int) -> list[str]:
    """``text`` in parts of at most ``limit`` UTF-16 code units (none empty)."""
    if not text.strip():
        return []
    return [part.text for part in kit_split(text, None, limit) if part.text.strip()]
