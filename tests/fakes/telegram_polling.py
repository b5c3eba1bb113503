"""getUpdates for the Telegram fake: long polling, and the conflicts Telegram reports.

One getUpdates may wait at a time. As on Telegram, a newer request ends the one still
waiting with 409 "Conflict: terminated by other getUpdates request; ...", and while a
webhook is set every getUpdates gets 409 "Conflict: can't use getUpdates method while
webhook is active; ...". A waiting request returns as soon as an update it may deliver
arrives, or empty when its `timeout` has passed.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass

from tests.fakes.telegram_updates import UpdateQueue
from tests.fakes.telegram_wire import (
    TERMINATED,
    WEBHOOK_ACTIVE,
    ApiError,
    Json,
    bad_request,
    int_param,
    ok,
)


@dataclass
class _Poll:
    wake: asyncio.Event
    terminated: bool = False


class LongPoll:
    def __init__(
        self,
        queue: UpdateQueue,
        lock: threading.RLock,
        changed: Callable[[], None],
        call_soon: Callable[[Callable[[], object]], None],
    ) -> None:
        self._queue = queue
        self._lock = lock
        self._changed = changed  # tell the fake's waiters (call with the lock held)
        self._call_soon = call_soon  # run on the server's loop, from any thread
        self._active: _Poll | None = None

    @property
    def waiting(self) -> bool:
        with self._lock:
            return self._active is not None

    def wake(self) -> None:
        """Let the waiting request look at the queue again; from any thread."""
        with self._lock:
            if self._active is not None:
                self._call_soon(self._active.wake.set)

    async def get_updates(self, params: Json) -> Json:
        """Serve one getUpdates request; runs on the server's loop."""
        offset = int_param(params, "offset", 0)
        limit = min(100, max(1, int_param(params, "limit", 100)))
        timeout = params.get("timeout", 0)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise bad_request("wrong parameter timeout specified")
        allowed = params.get("allowed_updates")
        if allowed is not None and not isinstance(allowed, list):
            raise bad_request("can't parse allowed_updates JSON array")
        poll = _Poll(asyncio.Event())
        with self._lock:
            if self._queue.webhook is not None:
                raise ApiError(409, WEBHOOK_ACTIVE)
            self._queue.confirm(offset)
            self._queue.set_allowed(allowed)
            if self._active is not None:
                self._active.terminated = True
                self._active.wake.set()
            self._active = poll
            self._changed()
        deadline = time.monotonic() + max(0.0, float(timeout))
        try:
            while True:
                with self._lock:
                    if poll.terminated:
                        raise ApiError(409, TERMINATED)
                    batch = self._queue.deliverable(limit)
                    remaining = deadline - time.monotonic()
                    if batch or remaining <= 0:
                        return ok(batch)
                    poll.wake.clear()
                # Not asyncio.wait_for: on Python 3.11 it swallows a cancellation that
                # lands as the wake-up does, and refuse_connections waits for this
                # connection's task to end.
                with suppress(TimeoutError):
                    async with asyncio.timeout(remaining):
                        await poll.wake.wait()
        finally:
            with self._lock:
                if self._active is poll:
                    self._active = None
