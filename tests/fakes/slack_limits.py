"""Slack's Web API rate-limit tiers, as the fake enforces them.

Each method belongs to a tier (calls per minute, with short bursts allowed), counted per
workspace per app; ``chat.postMessage`` is "special": about one message per second per
channel. Over the limit Slack answers HTTP 429 with ``Retry-After`` (whole seconds) and
``{"ok": false, "error": "ratelimited"}``. A ``scale`` speeds the clock up for tests (a
Tier 3 method at scale 60 allows 50 calls per second), never the rules.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

TIER_PER_MINUTE = {1: 1.0, 2: 20.0, 3: 50.0, 4: 100.0}
TIERS: dict[str, int] = {
    "apps.connections.open": 1,
    "auth.test": 4,
    "chat.update": 3,
    "chat.delete": 3,
    "chat.startStream": 2,
    "chat.appendStream": 4,
    "chat.stopStream": 2,
    "conversations.history": 3,
    "conversations.replies": 3,
    "conversations.info": 3,
    "files.getUploadURLExternal": 4,
    "files.completeUploadExternal": 4,
    "assistant.threads.setStatus": 4,
}
IN_FLIGHT = 0.1
"""Seconds after a 429 during which another call is not counted as made into its block:
it may have been sent before its client heard of the 429 (a concurrent request, or
another replica's, which hears of it through the shared store). Slack answers it 429
too; it is not a wait disobeyed."""
UNLISTED = frozenset({"conversations.history", "conversations.replies"})
"""Held to 1 call a minute for an app distributed outside the Marketplace (since 2025)."""
POST_PER_MINUTE = 60.0
"""``chat.postMessage``: one per second per channel."""


@dataclass(slots=True)
class Bucket:
    per_second: float
    burst: float
    tokens: float
    stamp: float
    blocked_until: float = 0.0
    blocked_at: float = 0.0

    def take(self, now: float) -> float:
        """0 when a call may go now (and takes it); otherwise seconds to wait."""
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.per_second)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.per_second


class RateLimits:
    def __init__(
        self, scale: float = 1.0, burst: float = 3.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.scale = scale
        self.burst = burst
        self._clock = clock
        self._buckets: dict[tuple[str, str], Bucket] = {}
        self._asked: dict[tuple[str, str], int] = {}
        """The 429s a test asked for (:meth:`block`), given to the next call each."""
        self.violations: list[str] = []
        """Calls made before the ``Retry-After`` they were given had passed."""
        self.limited: list[str] = []
        """Every method that was answered 429, in order."""
        self.unlisted = False
        """An app distributed outside the Marketplace: :data:`UNLISTED` methods are held
        to 1 call a minute (and 15 messages a page)."""

    def per_minute(self, method: str) -> float:
        if method == "chat.postMessage":
            return POST_PER_MINUTE
        if self.unlisted and method in UNLISTED:
            return 1.0
        return TIER_PER_MINUTE[TIERS.get(method, 3)]

    def check(self, method: str, key: str) -> int | None:
        """None when the call may go; otherwise the ``Retry-After`` (whole seconds)."""
        now = self._clock()
        bucket_key = (method, key if method == "chat.postMessage" else "")
        bucket = self._buckets.get(bucket_key)
        if bucket is None:
            rate = self.per_minute(method) * self.scale / 60.0
            bucket = Bucket(rate, self.burst, self.burst, now)
            self._buckets[bucket_key] = bucket
        if bucket.blocked_at + IN_FLIGHT < now < bucket.blocked_until:
            self.violations.append(f"{method} {key}: {bucket.blocked_until - now:.2f} s early")
        asked = self._asked.pop(bucket_key, None)
        if asked is None:
            wait = bucket.take(now)
        else:  # and the calls after it refused too until its Retry-After has passed
            bucket.tokens, bucket.stamp = 1 - asked * bucket.per_second, now
            wait = asked
        if wait <= 0:
            return None
        retry_after = max(1, math.ceil(wait))
        bucket.blocked_until = now + retry_after
        bucket.blocked_at = now
        self.limited.append(method)
        return retry_after

    def block(self, method: str, key: str, seconds: int) -> None:
        """Answer the next call of ``method`` 429 with ``Retry-After: seconds``, however
        late it comes (a fault a test asks for: the wait runs from that answer)."""
        self._asked[(method, key if method == "chat.postMessage" else "")] = seconds
