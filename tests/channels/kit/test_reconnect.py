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
