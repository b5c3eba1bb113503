"""Telegram's limits, as data for the kit's machinery.

A message holds at most 4096 UTF-16 code units (after entity parsing, which is what
the kit's splitter measures: it cuts the Markdown, and rendering never makes it
longer); a caption 1024 characters. Pacing limits (about one message a second in a
chat, thirty a second overall) are settings: ``chat_min_interval`` and
``global_max_rate`` in ``[channels.telegram]``.
"""

from __future__ import annotations

from thalos_bot.channels.text.split import Carry, Part
from thalos_bot.channels.text.split import split as _split

MAX_UNITS = 4096
"""The most a message's text may hold, in UTF-16 code units."""
MAX_CAPTION = 1024
"""The most a photo's caption may hold, in characters."""


def split(text: str, fence: Carry | None = None, limit: int = MAX_UNITS) -> list[Part]:
    """The kit's splitter at Telegram's message limit."""
    return _split(text, fence, limit)
