"""A per-address rate limit in front of a listener's whole ASGI app.

Each client address has a bucket of ``burst`` requests that refills at ``per_minute``
a minute. A request that finds its bucket empty is answered 429 with ``Retry-After``
(whole seconds until the next request would pass) and never reaches the app, so a
flood from one address costs a dictionary lookup each. The address is the one uvicorn
puts in the scope: the peer's, or the one a trusted proxy forwarded
(``forwarded_allow_ips``).

The buckets are bounded: at most :data:`MAX_ADDRESSES` are remembered, the least
recently seen dropped first (a dropped address starts again with a full bucket, which
is what an idle one would have anyway).

On replicas (``shared``: the buckets in PostgreSQL), the limit holds for the whole bot:
:class:`~thalos_bot.channels.listeners.shared_rate.SharedRate` spends from a local hand
drawn in batches from the shared bucket, and counts with this process's own buckets
while the store cannot be reached.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Protocol

from thalos_bot.channels.listeners.shared_rate import RateBuckets, SharedRate

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_ADDRESSES = 10_000
TOO_MANY = b'{"error": "Too many requests from this address; try again shortly."}'


class RateLimiter:
    """Token buckets per address; :meth:`take` says how long to wait (0: go ahead)."""

    def __init__(
        self,
        per_minute: int,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_addresses: int = MAX_ADDRESSES,
    ) -> None:
        if per_minute <= 0 or burst <= 0:
            raise ValueError("per_minute and burst must be positive")
        self.rate = per_minute / 60.0
        self.burst = float(burst)
        self.clock = clock
        self.max_addresses = max_addresses
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self.refused = 0

    def take(self, address: str) -> float:
        """Spend one request of ``address``'s bucket: 0.0 when allowed, else the seconds
        until one is available again."""
        now = self.clock()
        tokens, then = self._buckets.pop(address, (self.burst, now))
        tokens = min(self.burst, tokens + (now - then) * self.rate)
        if tokens >= 1.0:
            self._remember(address, tokens - 1.0, now)
            return 0.0
        self._remember(address, tokens, now)
        self.refused += 1
        return (1.0 - tokens) / self.rate

    async def wait(self, address: str) -> float:
        """:meth:`take`, as a :class:`Limiter`."""
        return self.take(address)

    def _remember(self, address: str, tokens: float, now: float) -> None:
        self._buckets[address] = (tokens, now)
        while len(self._buckets) > self.max_addresses:
            self._buckets.popitem(last=False)

    def __len__(self) -> int:
        return len(self._buckets)


def client_address(scope: Scope) -> str:
    client = scope.get("client")
    if client:
        return str(client[0])
    return "unknown"


class Limiter(Protocol):
    async def wait(self, key: str) -> float:
        """Spend one request of ``key``: 0.0 when allowed, else the seconds to wait."""
        ...


class RateLimit:
    """ASGI middleware: every HTTP request of ``app`` spends from its address's bucket."""

    def __init__(self, app: App, limiter: Limiter) -> None:
        self.app = app
        self.limiter = limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        wait = await self.limiter.wait(client_address(scope))
        if wait <= 0.0:
            await self.app(scope, receive, send)
            return
        await send(
            {
                "type": "http.response.start",
                "status": 429,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(TOO_MANY)).encode()),
                    (b"retry-after", str(max(1, math.ceil(wait))).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": TOO_MANY})


def rate_limited(
    app: App, per_minute: int, burst: int, shared: RateBuckets | None = None, scope: str = ""
) -> App:
    """``app`` behind a per-address limit; unchanged when ``per_minute`` is 0 (off).
    With ``shared``, counted for every replica in ``scope`` of the shared buckets."""
    if per_minute <= 0:
        return app
    local = RateLimiter(per_minute, burst)
    if shared is None:
        return RateLimit(app, local)
    return RateLimit(app, SharedRate(shared, scope, per_minute, burst, local.take))
