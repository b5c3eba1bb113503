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
import time
from collections.abc import Callable

from thalos_bot.domain.codes import new_code, shown, typed

CODE_TTL = 600.0
"""Seconds a pairing code stays valid."""

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
        return shown(self._value)

    @property
    def remaining(self) -> float:
        return self.expires_at - self._clock()

    @property
    def expired(self) -> bool:
        return self.remaining <= 0

    def redeem(self, text: str) -> bool:
        """True once, for the right code sent in time; case, spaces and dashes do not
        matter (:func:`~thalos_bot.domain.codes.typed`). The comparison takes the same
        time wherever a wrong code differs."""
        matches = hmac.compare_digest(typed(text).encode(), self._value.encode())
        if not matches or self._used or self.expired:
            return False
        self._used = True
        return True
