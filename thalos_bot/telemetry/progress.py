"""Long work as numbers: done of total, the rate, the time left, and when a plain report
is due (every :data:`STEP` of the total or every :data:`INTERVAL` seconds, whichever
comes first).

Plain, clock-injected and free of any output: the command line's progress display
(:mod:`thalos_bot.cli.progress`) prints its plain lines at these moments, and the
daemon logs its background work's progress events at them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

STEP = 0.10
"""A plain report at every tenth of the total."""
INTERVAL = 30.0
"""And at least every this many seconds, however slow the work."""

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Where the work stands ``elapsed`` seconds after it began."""

    done: int
    total: int
    elapsed: float

    @property
    def left(self) -> int:
        return max(self.total - self.done, 0)

    @property
    def fraction(self) -> float:
        return 1.0 if self.total <= 0 else min(self.done / self.total, 1.0)

    @property
    def rate(self) -> float | None:
        """Items a second so far; ``None`` before there is anything to measure."""
        if self.done <= 0 or self.elapsed <= 0:
            return None
        return self.done / self.elapsed

    @property
    def eta(self) -> float | None:
        """Seconds left at the rate so far; ``None`` while the rate is unknown."""
        rate = self.rate
        if self.left == 0:
            return 0.0
        return None if rate is None else self.left / rate

    def words(self) -> str:
        """``256/600 (42%), 310/s, about 1s left``: one plain line, no control
        characters."""
        parts = [f"{self.done:,}/{self.total:,} ({self.fraction:.0%})"]
        rate = self.rate
        if rate is not None:
            parts.append(f"{rate:,.0f}/s" if rate >= 10 else f"{rate:,.1f}/s")
        if self.left == 0:
            parts.append(f"done in {duration(self.elapsed)}")
        elif self.eta is not None:
            parts.append(f"about {duration(self.eta)} left")
        return ", ".join(parts)


def duration(seconds: float) -> str:
    """``45s``, ``3m 05s``, ``1h 02m``."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


class Milestones:
    """Says when a plain report is due: when the work passes another :data:`STEP` of
    its total, when :data:`INTERVAL` seconds have passed since the last report, and
    once when it is complete."""

    def __init__(
        self,
        total: int,
        *,
        step: float = STEP,
        interval: float = INTERVAL,
        clock: Clock = time.monotonic,
    ) -> None:
        self._clock = clock
        self._step = step
        self._interval = interval
        self._started = clock()
        self._last_time = self._started
        self._last_step = 0
        self._finished = False
        self.total = max(total, 0)
        self.done = 0

    def snapshot(self) -> Snapshot:
        return Snapshot(self.done, self.total, self._clock() - self._started)

    def update(self, done: int, total: int | None = None) -> Snapshot | None:
        """Record ``done`` (and a revised ``total``); the snapshot to report when one
        is due, else ``None``. Nothing is due while the total is 0, and the clock starts
        again when the first total arrives (work whose size is learnt late)."""
        if total is not None:
            if self.total == 0 and self.done == 0 and total > 0:
                self._started = self._last_time = self._clock()
            self.total = max(total, 0)
        self.done = max(done, 0)
        self.total = max(self.total, self.done)
        if self._finished or self.total == 0:
            return None
        now = self._clock()
        current = self.snapshot()
        if current.left == 0:
            self._finished = True
            return current
        step = int(current.fraction / self._step + 1e-9)
        if step > self._last_step or now - self._last_time >= self._interval:
            self._last_step = max(step, self._last_step)
            self._last_time = now
            return current
        return None
