"""The progress display's plain lines and their cadence (every tenth, or every 30 s,
whichever first), on a clock the test moves; the mode a stream calls for."""

from __future__ import annotations

import io

import pytest

from thalos_bot.cli.progress import Progress, progress_mode
from thalos_bot.telemetry.progress import Milestones, Snapshot, duration


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_line_at_each_tenth_and_one_at_the_end() -> None:
    clock = Clock()
    out = io.StringIO()
    progress = Progress("work", 100, mode="lines", stream=out, clock=clock)
    for done in range(1, 101):
        clock.now += 0.5
        progress.update(done)
    progress.close()
    lines = out.getvalue().splitlines()
    assert [line.split(" (")[0] for line in lines] == [f"work: {n}/100" for n in range(10, 101, 10)]
    assert lines[0] == "work: 10/100 (10%), 2.0/s, about 45s left"
    assert lines[-1] == "work: 100/100 (100%), 2.0/s, done in 50s"


def test_slow_work_gets_a_line_every_30_seconds() -> None:
    clock = Clock()
    out = io.StringIO()
    progress = Progress("slow", 1000, mode="lines", stream=out, clock=clock)
    for done in range(1, 21):
        clock.now += 10
        progress.update(done)
    lines = out.getvalue().splitlines()
    assert [line.split(" (")[0] for line in lines] == ["slow: 3/1,000", "slow: 6/1,000"] + [
        f"slow: {n}/1,000" for n in (9, 12, 15, 18)
    ]
    assert lines[0] == "slow: 3/1,000 (0%), 0.1/s, about 2h 46m left"


def test_a_total_learnt_late_starts_the_clock_then() -> None:
    clock = Clock()
    out = io.StringIO()
    progress = Progress("late", 0, mode="lines", stream=out, clock=clock)
    progress.update(0, 0)
    clock.now += 500  # the set-up before the size is known
    progress.update(0, 4)
    clock.now += 2
    progress.update(4)
    assert out.getvalue() == "late: 4/4 (100%), 2.0/s, done in 2s\n"


def test_empty_work_and_quiet_show_nothing() -> None:
    out = io.StringIO()
    Progress("empty", 0, mode="lines", stream=out).update(0, 0)
    quiet = Progress("quiet", 10, mode="off", stream=out)
    quiet.update(10)
    assert out.getvalue() == ""
    assert quiet.done == 10


@pytest.mark.parametrize(
    ("quiet", "stream", "term", "mode"),
    [
        (False, Terminal(), "xterm", "bar"),
        (False, Terminal(), "dumb", "lines"),
        (False, io.StringIO(), "xterm", "lines"),
        (True, Terminal(), "xterm", "off"),
        (True, io.StringIO(), "xterm", "off"),
    ],
)
def test_the_mode_follows_the_stream(
    quiet: bool, stream: io.StringIO, term: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TERM", term)
    assert progress_mode(quiet=quiet, stream=stream) == mode


def test_a_revised_total_and_milestones_never_repeat_the_end() -> None:
    clock = Clock()
    milestones = Milestones(10, clock=clock)
    assert milestones.update(5, 20) is not None  # 25 %
    clock.now += 1
    end = milestones.update(20)
    assert end == Snapshot(20, 20, 1.0)
    assert milestones.update(20) is None


def test_durations_and_unknown_rates_read_plainly() -> None:
    assert [duration(s) for s in (0, 45, 185, 3720)] == ["0s", "45s", "3m 05s", "1h 02m"]
    assert Snapshot(0, 10, 5.0).words() == "0/10 (0%)"
