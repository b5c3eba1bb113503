"""The global pacer: calls spaced at its rate, a short burst where the platform allows
one, and a platform-wide retry-after that holds every call."""

from __future__ import annotations

from time import monotonic

import pytest

from thalos_bot.channels.pacing.gate import GlobalPacer

pytestmark = pytest.mark.anyio


async def _elapsed(pacer: GlobalPacer, calls: int) -> float:
    started = monotonic()
    for _ in range(calls):
        await pacer.acquire()
    return monotonic() - started


async def test_without_a_burst_every_call_waits_its_interval() -> None:
    pacer = GlobalPacer(10.0)
    assert await _elapsed(pacer, 1) < 0.05
    assert await _elapsed(pacer, 1) >= 0.09


async def test_a_burst_goes_back_to_back_then_the_rate_holds() -> None:
    pacer = GlobalPacer(10.0, burst=3)
    assert await _elapsed(pacer, 3) < 0.05
    assert await _elapsed(pacer, 1) >= 0.09


async def test_a_platform_wide_wait_holds_even_a_burst() -> None:
    pacer = GlobalPacer(10.0, burst=3)
    pacer.block_for(0.2)
    assert await _elapsed(pacer, 1) >= 0.19
