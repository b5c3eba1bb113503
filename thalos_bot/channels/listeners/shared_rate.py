"""A rate limit held for the whole bot on replicas: a local hand of tokens per key,
drawn in batches from a bucket every replica shares.

A request spends a token from its key's hand, with no round trip. An empty hand draws
a batch from the shared bucket (:class:`RateBuckets`, one UPSERT: a share of what is
left, so far from the limit a replica asks once per many requests, and near it once per
request). A draw that finds the bucket empty answers the wait the store computed, and
the key is refused locally, with no round trip, until that wait is over: a flood costs
one round trip per refill per replica, not one per request.

Tokens in hand are dropped once the bucket would have refilled to ``burst`` anyway
(nothing a single process would have allowed is lost). A store that cannot be reached
(an error, or no answer within :data:`DRAW_BOUND`) never takes the listener down: the
key is counted by ``fallback`` (the process's own limit) for :data:`DOWN_FOR` seconds,
and the outage is logged once (``rate_limit_shared_down``), its end once too.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import anyio
import structlog

from thalos_bot.storage.database import DatabaseError

log = structlog.get_logger(__name__)

DRAW_BOUND = 1.0
"""Seconds a draw may take before the request is counted locally instead."""
DOWN_FOR = 5.0
"""After a failed draw, seconds every request is counted locally before trying again."""
PRUNE_EVERY = 600.0
"""Seconds between two prunes of the full buckets (by the draw that comes next)."""
MAX_KEYS = 10_000


class Drawn(Protocol):
    @property
    def granted(self) -> int: ...

    @property
    def left(self) -> float: ...


class RateBuckets(Protocol):
    """The shared buckets (:class:`~thalos_bot.cluster.rate_buckets.PgRateBuckets`);
    a failure is a :class:`DatabaseError`."""

    async def draw(self, scope: str, key: str, per_minute: int, burst: int) -> Drawn: ...

    async def prune(self, scope: str, per_minute: int, burst: int) -> int: ...


@dataclass(slots=True)
class _Hand:
    tokens: int = 0
    until: float = 0.0
    """The tokens are good until then (the bucket has refilled past them)."""
    empty_until: float = 0.0
    """The bucket was empty: refused locally until then."""
    lock: anyio.Lock = field(default_factory=anyio.Lock)


class SharedRate:
    """``per_minute`` requests a minute per key (``burst`` at once), counted in the
    shared ``scope``; :meth:`wait` says how long to wait (0: go ahead)."""

    def __init__(
        self,
        buckets: RateBuckets,
        scope: str,
        per_minute: int,
        burst: int,
        fallback: Callable[[str], float],
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = MAX_KEYS,
        bound: float = DRAW_BOUND,
    ) -> None:
        if per_minute <= 0 or burst <= 0:
            raise ValueError("per_minute and burst must be positive")
        self.buckets = buckets
        self.scope = scope
        self.per_minute = per_minute
        self.burst = burst
        self.rate = per_minute / 60.0
        self.fallback = fallback
        self.clock = clock
        self.max_keys = max_keys
        self.bound = bound
        self._hands: OrderedDict[str, _Hand] = OrderedDict()
        self._down_until: float | None = None
        """Set while the store is out of reach (local counting until then)."""
        self._pruned = clock()
        self.draws = 0
        self.refused = 0

    async def wait(self, key: str) -> float:
        """Spend one request of ``key``: 0.0 when allowed, else the seconds until one
        is available again."""
        now = self.clock()
        if self._down_until is not None and now < self._down_until:
            return self.fallback(key)
        hand = self._hand(key)
        spent = self._spend(hand, now)
        if spent is not None:
            return spent
        async with hand.lock:  # one draw per key at a time; the others use its batch
            now = self.clock()
            if self._down_until is not None and now < self._down_until:
                return self.fallback(key)  # the draw before this one found the store down
            spent = self._spend(hand, now)
            if spent is not None:
                return spent
            try:
                with anyio.fail_after(self.bound):
                    drawn = await self.buckets.draw(self.scope, key, self.per_minute, self.burst)
            except (DatabaseError, TimeoutError) as exc:
                self._went_down(exc)
                return self.fallback(key)
        self.draws += 1
        self._came_back()
        now = self.clock()
        if drawn.granted > 0:
            hand.tokens = drawn.granted - 1
            hand.until = now + (self.burst - drawn.left) / self.rate
            await self._prune(now)
            return 0.0
        wait = (1.0 - drawn.left) / self.rate
        hand.empty_until = now + wait
        self.refused += 1
        return wait

    def _spend(self, hand: _Hand, now: float) -> float | None:
        """A token from the hand (0.0), the local refusal's wait, or None: ask the store."""
        if hand.tokens > 0 and now < hand.until:
            hand.tokens -= 1
            return 0.0
        hand.tokens = 0
        if now < hand.empty_until:
            self.refused += 1
            return hand.empty_until - now
        return None

    def _hand(self, key: str) -> _Hand:
        hand = self._hands.pop(key, None) or _Hand()
        self._hands[key] = hand
        while len(self._hands) > self.max_keys:
            self._hands.popitem(last=False)
        return hand

    def _went_down(self, exc: BaseException) -> None:
        if self._down_until is None:
            log.warning(
                "rate_limit_shared_down",
                scope=self.scope,
                error=type(exc).__name__,
                counted="per replica",
            )
        self._down_until = self.clock() + DOWN_FOR

    def _came_back(self) -> None:
        if self._down_until is not None:
            self._down_until = None
            log.info("rate_limit_shared_back", scope=self.scope)

    async def _prune(self, now: float) -> None:
        if now - self._pruned < PRUNE_EVERY:
            return
        self._pruned = now
        try:
            with anyio.fail_after(self.bound):
                await self.buckets.prune(self.scope, self.per_minute, self.burst)
        except (DatabaseError, TimeoutError) as exc:
            self._went_down(exc)

    def __len__(self) -> int:
        return len(self._hands)
