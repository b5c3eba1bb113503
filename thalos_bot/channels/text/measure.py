"""How long a text is, as transports count it."""

from __future__ import annotations


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units (how Telegram, and JavaScript clients, count)."""
    return len(text.encode("utf-16-le")) // 2
