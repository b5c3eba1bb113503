"""Discord's per-route rate limits, as the fake enforces them.

Each route has a bucket (a hash shown in ``X-RateLimit-Bucket``) counted separately per
top-level resource (the channel id for the message routes). A bucket is a fixed window:
the first request opens it, ``limit`` requests fit, and it resets ``window`` seconds
later. Every counted response carries ``X-RateLimit-Limit``, ``-Remaining``, ``-Reset``
(epoch seconds), ``-Reset-After`` and ``-Bucket``. A request over the limit gets 429 with
``Retry-After``, ``X-RateLimit-Scope`` and the JSON body ``{"message": "You are being
rate limited.", "retry_after": s, "global": false}``.

Above every bucket, a bot may make ``global_limit`` (50) authenticated requests a
second in all (interaction callbacks are not counted). Over it, Discord answers 429
with ``"global": true``, ``X-RateLimit-Global: true`` and ``X-RateLimit-Scope: global``
and no bucket headers, and every route is closed to the bot until ``Retry-After``.

A request into a bucket before the reset it was told of (``Remaining: 0`` or a 429), or
any request during a global block it was told of, is a **violation**: the client did
not obey the headers. Tests assert there are none.
``force`` makes the next request on a route get a 429 of a given length (as a shared
limit does, one the client could not see coming).
"""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass, field

RATE_LIMITED = "You are being rate limited."


@dataclass(frozen=True, slots=True)
class RouteLimit:
    bucket: str
    limit: int
    window: float


@dataclass(slots=True)
class _Window:
    remaining: int
    reset_at: float
    told_empty_until: float = 0.0
    """Until when the client was told it may not send here (0: it was not)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    headers: dict[str, str]
    retry_after: float | None = None
    """Set when the request is refused with 429."""
    scope: str = "user"

    @property
    def is_global(self) -> bool:
        return self.scope == "global"


@dataclass(slots=True)
class Limits:
    routes: dict[str, RouteLimit]
    clock: object = field(default=time.monotonic)
    windows: dict[tuple[str, str], _Window] = field(default_factory=dict)
    forced: dict[str, float] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    """Every route that got a 429, in order (``global`` for the global limit)."""
    global_limit: int = 50
    global_window: float = 1.0
    _stamps: deque[float] = field(default_factory=deque)
    _global_told_until: float = 0.0

    def _now(self) -> float:
        clock = self.clock
        assert callable(clock)
        value = clock()
        assert isinstance(value, float)
        return value

    def check(self, route: str, major: str, *, counted: bool = True) -> Verdict:
        """The verdict on one request; ``counted``: it counts against the global limit
        (every authenticated request does)."""
        now = self._now()
        if counted:
            refused = self._global(route, major, now)
            if refused is not None:
                return refused
        rule = self.routes.get(route)
        if rule is None:
            return Verdict({})
        key = (rule.bucket, major)
        window = self.windows.get(key)
        if window is not None and window.told_empty_until > now:
            self.violations.append(f"{route} {major} {window.told_empty_until - now:.3f}s early")
        if window is None or now >= window.reset_at:
            window = _Window(rule.limit, now + rule.window)
            self.windows[key] = window
        forced = self.forced.pop(route, None)
        if forced is not None:
            window.told_empty_until = max(window.told_empty_until, now + forced)
            self.refused.append(route)
            return Verdict(self._headers(rule, window, now, forced), forced, "shared")
        if window.remaining <= 0:
            wait = window.reset_at - now
            window.told_empty_until = window.reset_at
            self.refused.append(route)
            return Verdict(self._headers(rule, window, now, wait), wait)
        window.remaining -= 1
        if window.remaining == 0:
            window.told_empty_until = window.reset_at
        return Verdict(self._headers(rule, window, now, None))

    def _global(self, route: str, major: str, now: float) -> Verdict | None:
        if self._global_told_until > now:
            self.violations.append(
                f"{route} {major} {self._global_told_until - now:.3f}s early (global)"
            )
        while self._stamps and self._stamps[0] <= now - self.global_window:
            self._stamps.popleft()
        if len(self._stamps) < self.global_limit:
            self._stamps.append(now)
            return None
        wait = self._stamps[0] + self.global_window - now
        self._global_told_until = max(self._global_told_until, now + wait)
        self.refused.append("global")
        headers = {
            "Retry-After": str(max(1, math.ceil(wait))),
            "X-RateLimit-Global": "true",
        }
        return Verdict(headers, wait, "global")

    def _headers(
        self, rule: RouteLimit, window: _Window, now: float, retry: float | None
    ) -> dict[str, str]:
        reset_after = window.reset_at - now
        headers = {
            "X-RateLimit-Limit": str(rule.limit),
            "X-RateLimit-Remaining": str(max(0, window.remaining) if retry is None else 0),
            "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
            "X-RateLimit-Reset-After": f"{reset_after:.3f}",
            "X-RateLimit-Bucket": rule.bucket,
        }
        if retry is not None:
            headers["Retry-After"] = str(max(1, math.ceil(retry)))
            headers["X-RateLimit-Reset-After"] = f"{max(retry, reset_after):.3f}"
        return headers


def message_routes(limit: int = 5, window: float = 5.0) -> dict[str, RouteLimit]:
    """The routes the fake counts: message create and edit, per channel, ``limit`` per
    ``window`` seconds each (Discord's are 5 per 5 s), and typing."""
    return {
        "POST /channels/{channel_id}/messages": RouteLimit(
            "80c17d2f203122d936070c88c8d10f33", limit, window
        ),
        "PATCH /channels/{channel_id}/messages/{message_id}": RouteLimit(
            "c5e2a4bd5f1c7f1a3d6e0b9f1e6b2a44", limit, window
        ),
        "POST /channels/{channel_id}/typing": RouteLimit(
            "4b7a3d0fe8f0c8a2d1c9b6e5f4a3b2c1", limit, window
        ),
    }
