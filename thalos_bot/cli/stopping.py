"""Ctrl-C (or SIGTERM) during a long command: stop the work cleanly, then say what was
done and what is left.

:func:`run_stoppably` runs the work in a task group beside a signal watcher. The first
SIGINT or SIGTERM cancels the work at its next checkpoint: a transaction in flight is
rolled back, and whatever the work committed stays. The work's own cleanup may run
shielded (recording that it was interrupted, say). The watcher is gone after the first
signal, so a second Ctrl-C interrupts at once, the usual way.
"""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import anyio
from anyio import CancelScope
from anyio.abc import TaskStatus

T = TypeVar("T")

EXIT_STOPPED = 130
"""The exit status of a command stopped by Ctrl-C (128 + SIGINT), as shells expect."""


@dataclass(slots=True)
class Outcome(Generic[T]):
    value: T | None = None
    """What the work returned; ``None`` when it was stopped."""
    stopped: bool = False
    """The work was stopped by a signal."""


async def run_stoppably(work: Callable[[], Awaitable[T]]) -> Outcome[T]:
    """Run ``work`` until it returns or the first SIGINT/SIGTERM stops it. Exceptions
    from ``work`` propagate as they are."""
    outcome: Outcome[T] = Outcome()
    failure: Exception | None = None
    async with anyio.create_task_group() as tasks:
        await tasks.start(_watch, tasks.cancel_scope, outcome)
        try:
            outcome.value = await work()
        except Exception as exc:  # noqa: BLE001 - raised as itself below, not in a group
            failure = exc
        tasks.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return outcome


async def _watch(scope: CancelScope, outcome: Outcome[T], *, task_status: TaskStatus[None]) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()
        async for _ in signals:
            outcome.stopped = True
            scope.cancel()
            return
