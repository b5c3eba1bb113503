"""Requests per API key per minute, counted by this process. On replicas the API counts
each key for the whole bot instead (:class:`~thalos_bot.channels.listeners.shared_rate.
SharedRate` over the shared store), and uses this one only while the store cannot be
reached.

A token bucket per key: ``per_minute`` requests at once at most, refilled evenly over
the minute. A request past it is refused with the seconds until one is allowed again
(the API answers 429 with ``Retry-After``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

KEYS_HELD = 10_000
"""Buckets kept at most; past that, the full ones (nothing to remember) are dropped."""


class KeyRate:
    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        if per_minute < 1:
            raise ValueError("per_minute must be at least 1")
        self.per_minute = per_minute
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}

    def take(self, key: str) -> int:
        """One request for ``key``: 0 when allowed, else the whole seconds to wait."""
        now = self._clock()
        rate = self.per_minute / 60.0
        tokens, at = self._buckets.get(key, (float(self.per_minute), now))
        tokens = min(float(self.per_minute), tokens + (now - at) * rate)
        if tokens < 1.0:
            self._buckets[key] = (tokens, now)
            return max(1, math.ceil((1.0 - tokens) / rate))
        self._buckets[key] = (tokens - 1.0, now)
        if len(self._buckets) > KEYS_HELD:
            self._forget_full(now, rate)
        return 0

    async def wait(self, key: str) -> float:
        """:meth:`take`, in seconds, as the API asks every limit."""
        return float(self.take(key))

    def _forget_full(self, now: float, rate: float) -> None:
        for key, (tokens, at) in list(self._buckets.items()):
            if tokens + (now - at) * rate >= self.per_minute:
                del self._buckets[key]
