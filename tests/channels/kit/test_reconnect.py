"""The kit's reconnecting receiver state: what the core reads of a connection that is
opened again after each failure, and the backoff between tries."""

from __future__ import annotations

import pytest

from thalos_bot.channels.pacing.backoff import Backoff
from thalos_bot.channels.reconnect import Reconnecting

pytestmark = pytest.mark.anyio


async def test_a_failure_is_said_and_waited_out_and_an_opening_resets_it() -> None:
    link = Reconnecting("test", Backoff(0.001, 0.004))
    assert not link.receiving.is_set()
    assert not link.retrying.is_set()
    await link.failed("cannot subscribe: TimeoutError")
    await link.failed("cannot subscribe: TimeoutError")
    assert link.retrying.is_set(), "the channel is trying again"
    failing = link.health.retrying
    assert failing
    assert link.health.last_error == "cannot subscribe: TimeoutError"
    assert link.backoff.failures == 2
    link.opened()
    assert link.receiving.is_set()
    failing = link.health.retrying
    assert not failing
    assert link.backoff.failures == 0, "the next failure waits the shortest delay again"


async def test_a_platform_wait_of_zero_is_the_backoffs_own_and_a_huge_one_is_capped(
    slept: list[float],
) -> None:
    link = Reconnecting("test", Backoff(1.0, 8.0))
    for _ in range(5):
        await link.failed("M_LIMIT_EXCEEDED", 0.0)  # a 429 asking for no wait at all
    assert all(delay >= 0.75 for delay in slept), slept
    assert slept[-1] >= 8.0 * 0.75, "the backoff grew with each failure"
    assert link.backoff.failures == 5
    await link.failed("M_LIMIT_EXCEEDED", -3.0)
    assert slept[-1] > 0
    await link.failed("M_LIMIT_EXCEEDED", 10**9)  # a day's "retry after": not obeyed
    assert slept[-1] == 8.0
    await link.failed("M_LIMIT_EXCEEDED", 2.5)  # a sane wait is the platform's own
    assert slept[-1] == 2.5
