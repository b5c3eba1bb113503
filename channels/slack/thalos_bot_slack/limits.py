"""Slack's rate-limit tiers as data, and the pacer that keeps calls within them.

Slack counts each Web API method per workspace in tiers (calls per minute, short bursts
tolerated); ``chat.postMessage`` allows about one message per second per channel. Over
a limit it answers 429 with ``Retry-After`` seconds: the pacer then holds that method
(or that channel's posts) until the time has passed, for every conversation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import anyio

TIER_PER_MINUTE = {1: 1.0, 2: 20.0, 3: 50.0, 4: 100.0}
TIERS: dict[str, int] = {
    "auth.test": 4,
    "chat.update": 3,
    "chat.startStream": 2,
    "chat.appendStream": 4,
    "chat.stopStream": 2,
    "conversations.history": 3,
    "conversations.replies": 3,
    "files.getUploadURLExternal": 4,
    "files.completeUploadExternal": 4,
    "assistant.threads.setStatus": 4,
}
POST_PER_MINUTE = 60.0
"""``chat.postMessage``: one per second per channel."""
BURST = 3.0


def per_minute(method: str) -> float:
    if method == "chat.postMessage":
        return POST_PER_MINUTE
    return TIER_PER_MINUTE[TIERS.get(method, 3)]


@dataclass(slots=True)
class _Bucket:
    per_second: float
    tokens: float
    stamp: float
    blocked_until: float = 0.0


class TierPacer:
    """One bucket per method (per channel for ``chat.postMessage``). ``scale`` speeds
    the clock up for a test fake that counts time the same way."""

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale
        self._buckets: dict[tuple[str, str], _Bucket] = {}

    def _bucket(self, method: str, channel: str) -> _Bucket:
        key = (method, channel if method == "chat.postMessage" else "")
        bucket = self._buckets.get(key)
        if bucket is None:
            rate = per_minute(method) * self.scale / 60.0
            bucket = _Bucket(rate, BURST, time.monotonic())
            self._buckets[key] = bucket
        return bucket

    async def acquire(self, method: str, channel: str) -> None:
        """Wait until a call of ``method`` may go, and count it."""
        bucket = self._bucket(method, channel)
        while True:
            now = time.monotonic()
            if now < bucket.blocked_until:
                await anyio.sleep(bucket.blocked_until - now)
                continue
            bucket.tokens = min(BURST, bucket.tokens + (now - bucket.stamp) * bucket.per_second)
            bucket.stamp = now
            if bucket.tokens >= 1:
                bucket.tokens -= 1
                return
            await anyio.sleep((1 - bucket.tokens) / bucket.per_second)

    def blocked(self, method: str, channel: str, retry_after: float) -> None:
        """Slack said 429: nothing of ``method`` goes before ``retry_after`` seconds."""
        bucket = self._bucket(method, channel)
        bucket.blocked_until = max(bucket.blocked_until, time.monotonic() + retry_after)
        bucket.tokens = 0.0

    def blocked_for(self) -> float:
        now = time.monotonic()
        return max((b.blocked_until - now for b in self._buckets.values()), default=0.0)
