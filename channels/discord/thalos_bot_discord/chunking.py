"""Discord's message limit, and splitting an answer to it with the kit's splitter.

Discord counts a message's ``content`` in characters, at most 2,000. The kit's splitter
(:func:`thalos_bot.channels.text.split.split`) cuts in UTF-16 code units, which are never
fewer than characters, so a part it makes at 2,000 units always fits. It cuts at a
paragraph break, else a line break, else a space, and closes and reopens whatever is
open at a cut (a code fence, bold, a link). The text split is the Discord-dialect text
(:mod:`thalos_bot_discord.markdown`), which is Markdown itself, so what is measured is
exactly what is sent.
"""

from __future__ import annotations

from thalos_bot.channels.text.split import split as kit_split

LIMIT = 2000
"""Discord's limit on a message's ``content``, in characters."""


def split(text: str, limit: int = LIMIT) -> list[str]:
    """``text`` as parts of at most ``limit`` characters (none blank; [] for no text)."""
    if not text.strip():
        return []
    return [part.text for part in kit_split(text, None, limit) if part.text.strip()]
