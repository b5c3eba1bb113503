"""Bounded waits for tests: for a condition, or for the tasks to have gone as far as
they can.

``anyio.wait_all_tasks_blocked()`` alone waits, with no bound, for a moment when every
task is blocked at once; with sockets, a database pool or replicas running, that moment
may never come, and the test hangs until its timeout (then its teardown hangs too).
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

SETTLE_BOUND = 5.0


async def until(check: Callable[[], bool], timeout: float = 15.0, step: float = 0.05) -> None:
    """Return once ``check()`` holds; fail after ``timeout`` seconds."""
    with anyio.fail_after(timeout):
        while not check():
            await anyio.sleep(step)


async def settled(bound: float = SETTLE_BOUND) -> None:
    """Every task went as far as it can, or ``bound`` seconds passed: for a test that
    then checks that something did *not* happen."""
    with anyio.move_on_after(bound):
        await anyio.wait_all_tasks_blocked()
