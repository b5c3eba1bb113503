"""Telegram's limits, as data for the kit's machinery.

A message holds at most 4096 UTF-16 code units (after entity parsing, which is what
the kit's splitter measures: it cuts the Markdown, and rendering never makes it
longer); a caption 1024 characters; a bot downloads at most 20 MB
(:data:`~thalos_bot.media.limits.TELEGRAM_DOWNLOAD_LIMIT`). Pacing limits (about
one message a second in a chat, thirty a second overall) are also settings:
``chat_min_interval`` and ``global_max_rate`` in ``[channels.telegram]``.
"""

from __future__ import annotations

from thalos_bot.channels.delivery.wire import WireLimits
from thalos_bot.channels.text.split import Carry, Part
from thalos_bot.channels.text.split import split as _split

LIMITS = WireLimits(
    message_units=4096,
    caption_units=1024,
    chat_min_interval=1.0,
    global_rate=25.0,
    resend="probe",
)
"""The pacing ones are the settings' defaults. Telegram has no idempotent send: a send
in doubt is checked by the plug-in's probe of message ids."""
MAX_UNITS = LIMITS.message_units
"""The most a message's text may hold, in UTF-16 code units."""


def split(text: str, fence: Carry | None = None, limit: int = MAX_UNITS) -> list[Part]:
    """The kit's splitter at Telegram's message limit."""
    return _split(text, fence, limit)
