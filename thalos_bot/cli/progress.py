"""How a long command shows its progress: a ``rich`` bar on a terminal, plain lines when
piped or under systemd, nothing with ``--quiet``.

- **On a terminal** (the stream is a TTY): a bar with done/total, the rate and the time
  left, redrawn at most :data:`REFRESH_PER_SECOND` times a second by ``rich``'s
  refresh thread, whatever the rate of updates.
- **Otherwise**: one plain line (``memory reindex: 256/600 (42%), 310/s, about 1s
  left``) every tenth of the total or every 30 seconds, whichever comes first (see
  :class:`~thalos_bot.telemetry.progress.Milestones`), and one at the end. No control
  characters, so a log file or the journal holds them as they are.
- **Quiet**: nothing.

Progress goes to stderr by default, so what a command prints on stdout stays clean for
a pipe. A command uses it as::

    with show_progress("memory reindex", total, quiet=args.quiet) as progress:
        ...
        progress.update(done)           # or progress.advance(n), or update(done, total)

The total may be 0 at first and given with the first update; nothing is shown while it
is 0.

Stopping on Ctrl-C is :func:`thalos_bot.cli.stopping.run_stoppably`.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Literal, Self, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
)
from rich.progress import Progress as RichProgress
from rich.text import Text

from thalos_bot.telemetry.progress import Clock, Milestones, duration

Mode = Literal["bar", "lines", "off"]
REFRESH_PER_SECOND = 10.0


def progress_mode(*, quiet: bool = False, stream: TextIO | None = None) -> Mode:
    """``off`` when quiet, ``bar`` on a terminal (not ``TERM=dumb``), else ``lines``."""
    if quiet:
        return "off"
    stream = stream if stream is not None else sys.stderr
    try:
        terminal = stream.isatty()
    except ValueError:  # a closed stream
        return "off"
    return "bar" if terminal and os.environ.get("TERM") != "dumb" else "lines"


class RateColumn(ProgressColumn):
    """Items a second since the work began (the plain lines' measure)."""

    def render(self, task: Task) -> Text:
        rate: float | None = task.fields.get("rate")
        if rate is None:
            return Text("?/s", style="progress.data.speed")
        shown = f"{rate:,.0f}/s" if rate >= 10 else f"{rate:,.1f}/s"
        return Text(shown, style="progress.data.speed")


class LeftColumn(ProgressColumn):
    """The time left at that rate (``done in …`` once finished)."""

    def render(self, task: Task) -> Text:
        eta: float | None = task.fields.get("eta")
        if task.finished:
            return Text(f"done in {duration(task.fields.get('elapsed', 0.0))}", "progress.elapsed")
        if eta is None:
            return Text("? left", style="progress.remaining")
        return Text(f"{duration(eta)} left", style="progress.remaining")


class Progress:
    """One long job's progress, shown as ``mode`` says. Use it as a context manager (or
    call :meth:`close`)."""

    def __init__(
        self,
        label: str,
        total: int,
        *,
        mode: Mode,
        stream: TextIO | None = None,
        clock: Clock = time.monotonic,
        least: int = 1,
    ) -> None:
        """``least``: show nothing for work of fewer items (a small skills library)."""
        self.label = label
        self._least = max(least, 1)
        self.mode: Mode = mode
        self._stream = stream if stream is not None else sys.stderr
        self._milestones = Milestones(total, clock=clock)
        self._bar: RichProgress | None = None
        self._task: TaskID | None = None
        if mode == "bar":
            self._bar = RichProgress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                RateColumn(),
                LeftColumn(),
                console=Console(file=self._stream),
                refresh_per_second=REFRESH_PER_SECOND,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._task = self._bar.add_task(label, total=max(total, 0))
        self._shown = False
        self._closed = False
        self._lock = threading.Lock()

    @property
    def done(self) -> int:
        return self._milestones.done

    @property
    def total(self) -> int:
        return self._milestones.total

    def update(self, done: int, total: int | None = None) -> None:
        """``done`` items of ``total`` (unchanged when ``None``) are finished. Nothing
        is shown while the total is 0 (work that turned out to be empty), nor once
        closed (a worker thread left running after a stop)."""
        with self._lock:  # a worker thread (the skills scan) may update while close() runs
            due = self._milestones.update(done, total)
            if self._closed or self._milestones.total < self._least:
                return
            if self._bar is not None and self._task is not None:
                now = self._milestones.snapshot()
                self._bar.update(
                    self._task,
                    completed=now.done,
                    total=now.total,
                    rate=now.rate,
                    eta=now.eta,
                    elapsed=now.elapsed,
                )
                if not self._shown:
                    self._bar.start()
                    self._shown = True
            elif self.mode == "lines" and due is not None:
                self._stream.write(f"{self.label}: {due.words()}\n")
                self._stream.flush()

    def advance(self, count: int = 1) -> None:
        self.update(self.done + count)

    def close(self) -> None:
        """Stop the bar (its last state stays on the screen)."""
        with self._lock:
            self._closed = True
            if self._bar is not None and self._shown:
                self._bar.stop()
            self._bar = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


@contextmanager
def show_progress(
    label: str,
    total: int,
    *,
    quiet: bool = False,
    stream: TextIO | None = None,
    least: int = 1,
) -> Iterator[Progress]:
    """A :class:`Progress` for ``total`` items in the mode the stream and ``quiet`` call
    for (nothing for fewer than ``least`` items); the bar is stopped on the way out,
    however the block ends."""
    stream = stream if stream is not None else sys.stderr
    mode = progress_mode(quiet=quiet, stream=stream)
    with Progress(label, total, mode=mode, stream=stream, least=least) as progress:
        yield progress
