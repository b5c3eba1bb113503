"""One-time codes a person reads off one screen and types on another: pairing a
transport, logging in to the web page, linking an identity to a person.

One alphabet without the characters that look alike (no 0/O, 1/I/L), one shown form
(two halves joined by a dash), and one reading of what was typed: case, spaces, dashes
and any other punctuation do not matter. A code kept beyond the process that made it
is kept only as :func:`code_hash` of it.
"""

from __future__ import annotations

import hashlib
import secrets

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8


def new_code(length: int = CODE_LENGTH) -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(length))


def shown(code: str) -> str:
    """``7KQ2-9XF4``: easier to read out."""
    half = len(code) // 2
    return f"{code[:half]}-{code[half:]}"


def typed(text: str) -> str:
    """What was typed, as the code it means: its letters and digits, upper-cased."""
    return "".join(ch for ch in text.upper() if ch.isalnum())


def code_hash(text: str) -> str:
    """What is kept of a code: a SHA-256 of it as :func:`typed` reads it."""
    return hashlib.sha256(typed(text).encode()).hexdigest()
