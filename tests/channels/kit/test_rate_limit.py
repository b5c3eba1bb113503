"""The per-address rate limit every listener sits behind: token buckets per address,
bounded in how many addresses they remember, answered 429 with Retry-After."""

from __future__ import annotations

import httpx
import pytest

from thalos_bot.channels.listeners.rate import (
    RateLimit,
    RateLimiter,
    Receive,
    Scope,
    Send,
    rate_limited,
)

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_passes_then_the_next_waits_for_its_token() -> None:
    clock = Clock()
    limiter = RateLimiter(60, 3, clock=clock)
    assert [limiter.take("10.0.0.1") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.take("10.0.0.1") == pytest.approx(1.0)
    assert limiter.take("10.0.0.2") == 0.0, "another address has its own bucket"
    clock.now += 1.0
    assert limiter.take("10.0.0.1") == 0.0
    assert limiter.refused == 1


def test_an_idle_address_refills_to_its_burst_and_no_further() -> None:
    clock = Clock()
    limiter = RateLimiter(600, 2, clock=clock)
    for _ in range(2):
        limiter.take("a")
    clock.now += 3600
    assert [limiter.take("a") for _ in range(3)][:2] == [0.0, 0.0]
    assert limiter.take("a") > 0


def test_the_remembered_addresses_are_bounded() -> None:
    limiter = RateLimiter(60, 1, clock=Clock(), max_addresses=100)
    for n in range(10_000):
        limiter.take(f"10.{n // 256 % 256}.{n % 256}.1")
    assert len(limiter) == 100


def test_bad_figures_are_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        RateLimiter(0, 5)


async def _hello(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hello"})


async def test_past_the_burst_the_answer_is_429_with_retry_after() -> None:
    app = RateLimit(_hello, RateLimiter(6, 2))
    transport = httpx.ASGITransport(app=app, client=("192.0.2.7", 5000))
    async with httpx.AsyncClient(transport=transport, base_url="http://bot") as client:
        codes = [(await client.get("/")).status_code for _ in range(2)]
        refused = await client.get("/hooks/github")
    assert codes == [200, 200]
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "10"
    assert "Too many requests" in refused.json()["error"]


def test_a_limit_of_zero_is_off() -> None:
    assert rate_limited(_hello, 0, 10) is _hello
