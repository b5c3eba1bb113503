"""Flood control for the Telegram fake: token buckets, retry_after, and its violations.

Rates, as Telegram documents them loosely: about one message per second per chat
with short bursts tolerated, about thirty per second overall.

- Each chat has two buckets of `burst` tokens refilled one per `per_chat_interval`
  seconds: one shared by sendMessage and editMessageText, one for sendMessageDraft
  (so a streamed draft never starves the final message).
- A global bucket of `global_per_second` tokens refills at that rate; every limited
  call takes from it.
- An empty bucket answers 429 with an integer retry_after >= 1. From then on the
  *scope* of that answer is closed until retry_after has passed: the chat, for the
  limited methods; the (method, chat) pair for any other method given a 429.
  A request to a closed scope is recorded as a `RetryAfterViolation` and answered 429
  again with the time that is left.

`per_chat_interval=0` or `global_per_second=0` turns that limit off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

LIMITED_METHODS = frozenset(
    {
        "sendMessage",
        "editMessageText",
        "sendMessageDraft",
        "sendPhoto",
        "sendVoice",
        "editMessageCaption",
    }
)

ChatKey = int | str | None
Scope = tuple[str, ChatKey]


@dataclass(frozen=True)
class RetryAfterViolation:
    """A request that came before the retry_after the client had been given ran out."""

    method: str
    chat_id: ChatKey
    at: float  # time.monotonic() when the offending request arrived
    allowed_at: float  # time.monotonic() from which the client was allowed to retry
    retry_after: int  # what the client had been told


@dataclass
class _Penalty:
    until: float
    retry_after: int


class _Bucket:
    def __init__(self, capacity: float, interval: float, now: float) -> None:
        self._capacity = capacity
        self._interval = interval
        self._tokens = capacity
        self._updated = now

    def take(self, now: float) -> float:
        """Take a token; 0.0 on success, else the seconds until one is available."""
        elapsed = max(0.0, now - self._updated)
        self._tokens = min(self._capacity, self._tokens + elapsed / self._interval)
        self._updated = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        return (1.0 - self._tokens) * self._interval


def scope_of(method: str, chat_id: ChatKey) -> Scope:
    if method in LIMITED_METHODS:
        return ("chat", chat_id)
    return (method, chat_id)


class FloodControl:
    """Decides 429s and remembers which ones a client did not wait out. Not thread-safe."""

    def __init__(self, per_chat_interval: float, burst: int, global_per_second: float) -> None:
        self._per_chat_interval = per_chat_interval
        self._burst = max(1, burst)
        self._global_per_second = global_per_second
        self._global: _Bucket | None = None
        self._buckets: dict[tuple[str, ChatKey], _Bucket] = {}
        self._penalties: dict[Scope, _Penalty] = {}
        self.violations: list[RetryAfterViolation] = []

    def check_penalty(self, method: str, chat_id: ChatKey, now: float) -> int | None:
        """If the scope is closed, record the violation and return the seconds left."""
        penalty = self._penalties.get(scope_of(method, chat_id))
        if penalty is None or now >= penalty.until:
            return None
        self.violations.append(
            RetryAfterViolation(method, chat_id, now, penalty.until, penalty.retry_after)
        )
        return max(1, math.ceil(penalty.until - now))

    def throttle(self, method: str, chat_id: ChatKey, now: float) -> int | None:
        """Take tokens for a limited method; the retry_after to answer with, if any."""
        if method not in LIMITED_METHODS:
            return None
        wait = 0.0
        if self._global_per_second > 0:
            if self._global is None:
                self._global = _Bucket(
                    max(1.0, self._global_per_second), 1.0 / self._global_per_second, now
                )
            wait = self._global.take(now)
        if wait == 0.0 and self._per_chat_interval > 0:
            kind = "draft" if method == "sendMessageDraft" else "message"
            bucket = self._buckets.get((kind, chat_id))
            if bucket is None:
                bucket = _Bucket(self._burst, self._per_chat_interval, now)
                self._buckets[(kind, chat_id)] = bucket
            wait = bucket.take(now)
        if wait == 0.0:
            return None
        retry_after = max(1, math.ceil(wait))
        self.impose(method, chat_id, retry_after, now)
        return retry_after

    def impose(self, method: str, chat_id: ChatKey, retry_after: int, now: float) -> None:
        """Close the scope of (method, chat_id) for retry_after seconds from now."""
        scope = scope_of(method, chat_id)
        until = now + retry_after
        current = self._penalties.get(scope)
        if current is None or current.until < until:
            self._penalties[scope] = _Penalty(until, retry_after)
