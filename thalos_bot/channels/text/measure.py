"""How long a text is, as transports count it."""

from __future__ import annotations


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units (how Telegram, and JavaScript clients, count)."""
    return len(text.encode("utf-16-le")) // 2


def utf16_index(text: str, units: int) -> int:
    """The index in ``text`` of an offset counted in UTF-16 code units (where Telegram's
    entities and Signal's mentions are placed); the length of ``text`` past its end."""
    seen = 0
    for index, ch in enumerate(text):
        if seen >= units:
            return index
        seen += 2 if ord(ch) > 0xFFFF else 1
    return len(text)
