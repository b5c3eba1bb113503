"""Exponential backoff with jitter, for reconnecting and for retrying transient failures."""

from __future__ import annotations

import random


class Backoff:
    """Delays of ``initial * 2**n`` capped at ``maximum``, each with ±25 % jitter so that
    many clients (or chats) do not retry in lockstep."""

    def __init__(self, initial: float, maximum: float) -> None:
        self.initial = initial
        self.maximum = maximum
        self.failures = 0

    def next_delay(self) -> float:
        base: float = min(self.maximum, self.initial * 2.0 ** min(self.failures, 30))
        self.failures += 1
        jitter: float = random.uniform(0.75, 1.25)  # noqa: S311 - jitter, not cryptography
        return base * jitter

    def reset(self) -> int:
        """Forget the failures; return how many there were (to log a recovery)."""
        failures, self.failures = self.failures, 0
        return failures
