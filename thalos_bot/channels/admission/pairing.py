"""A pairing code: the one-time secret that finds the account of the person setting a
bot up.

The transport waits for a private message holding the code (Telegram: a temporary long
poll; Matrix: a direct room) and adds its sender to the allowlist. The code is
single-use, expires after ten minutes and is compared in constant time. Nobody is ever
answered: a wrong code, a stranger, a group message are all ignored without a word,
exactly as the running bot ignores strangers.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable

CODE_TTL = 600.0
"""Seconds a pairing code stays valid."""
ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
"""No 0/O or 1/I: the code is read off one screen and typed on another."""
CODE_LENGTH = 8

Clock = Callable[[], float]


class PairingError(Exception):
    """Pairing could not finish; ``message`` is fit to show the person."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class PairingExpiredError(PairingError):
    def __init__(self, command: str) -> None:
        super().__init__(
            f"the pairing code expired before anyone sent it; run `{command}` again for a new one"
        )


def new_code(length: int = CODE_LENGTH) -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(length))


class PairingCode:
    """A one-time code: :meth:`redeem` accepts it once, before it expires."""

    def __init__(self, *, clock: Clock = time.monotonic, ttl: float = CODE_TTL) -> None:
        self._value = new_code()
        self._clock = clock
        self.expires_at = clock() + ttl
        self._used = False

    @property
    def shown(self) -> str:
        """The code as printed: two groups of four."""
        half = CODE_LENGTH // 2
        return f"{self._value[:half]}-{self._value[half:]}"

    @property
    def remaining(self) -> float:
        return self.expires_at - self._clock()

    @property
    def expired(self) -> bool:
        return self.remaining <= 0

    def redeem(self, text: str) -> bool:
        """True once, for the right code sent in time; spaces, a dash and case do not
        matter. The comparison takes the same time wherever a wrong code differs."""
        typed = "".join(text.split()).replace("-", "").upper()
        matches = hmac.compare_digest(typed.encode(), self._value.encode())
        if not matches or self._used or self.expired:
            return False
        self._used = True
        return True
