"""Pacing writes within Discord's per-channel bucket.

Posting and editing messages in one channel share a small budget (about 5 per 5 s).
:class:`ChannelPace` keeps the times of the last writes in a channel and says how long
the next one must wait so that no more than ``limit`` fall in any ``window``. A stream of
edits thus slows to the bucket's pace, and the text that arrived meanwhile goes out in
the next edit, instead of a 429 stalling the queue. A 429 that comes anyway (a shared
limit) is waited out by discord.py for its ``retry_after``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from time import monotonic

import anyio


class ChannelPace:
    def __init__(self, limit: int, window: float, clock: Callable[[], float] = monotonic) -> None:
        self._limit = limit
        self._window = window
        self._clock = clock
        self._times: deque[float] = deque()

    def wait_for(self) -> float:
        """Seconds until one more write fits (0: now)."""
        now = self._clock()
        while self._times and now - self._times[0] >= self._window:
            self._times.popleft()
        if len(self._times) < self._limit:
            return 0.0
        return self._times[0] + self._window - now

    async def slot(self) -> None:
        """Reserve the next write that fits (now, or when the oldest in the window has
        aged out of it) and wait until then."""
        delay = self.wait_for()
        self._times.append(self._clock() + delay)
        if delay > 0:
            await anyio.sleep(delay)
