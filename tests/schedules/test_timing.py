"""Cron next times in real time, right across DST changes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest

from thalos_bot.domain.timing import check_cron, next_cron, next_run

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def runs(expression: str, zone: str, start: datetime, until: datetime) -> list[datetime]:
    found: list[datetime] = []
    at = start
    while True:
        nxt = next_cron(expression, zone, at)
        if nxt is None or nxt > until:
            return found
        found.append(nxt)
        at = nxt


def test_a_0230_job_runs_once_on_the_spring_forward_day() -> None:
    # Europe/Berlin skips 02:00-03:00 on 29 March 2026.
    day = runs(
        "30 2 * * *",
        "Europe/Berlin",
        datetime(2026, 3, 28, 12, tzinfo=UTC),
        datetime(2026, 3, 30, 12, tzinfo=UTC),
    )
    local = [t.astimezone(BERLIN) for t in day]
    assert [(t.day, t.hour, t.minute) for t in local] == [(29, 3, 30), (30, 2, 30)]


def test_a_0230_job_runs_once_on_the_fall_back_day() -> None:
    # Europe/Berlin shows 02:00-03:00 twice on 25 October 2026.
    day = runs(
        "30 2 * * *",
        "Europe/Berlin",
        datetime(2026, 10, 24, 12, tzinfo=UTC),
        datetime(2026, 10, 26, 12, tzinfo=UTC),
    )
    assert day == [
        datetime(2026, 10, 25, 0, 30, tzinfo=UTC),
        datetime(2026, 10, 26, 1, 30, tzinfo=UTC),
    ]
    assert day[0].astimezone(BERLIN).utcoffset() == timedelta(hours=2)  # the first 02:30


def test_a_morning_job_keeps_its_wall_time_across_both_changes() -> None:
    times = runs(
        "0 9 * * 1",
        "America/New_York",
        datetime(2026, 3, 1, tzinfo=UTC),
        datetime(2026, 11, 30, tzinfo=UTC),
    )
    assert all(t.astimezone(NEW_YORK).hour == 9 for t in times)
    offsets = {t.astimezone(NEW_YORK).utcoffset() for t in times}
    assert offsets == {timedelta(hours=-5), timedelta(hours=-4)}
    assert len(times) == len({t.date() for t in times})


def test_an_hourly_job_on_the_spring_forward_day_never_runs_twice_at_one_instant() -> None:
    times = runs(
        "30 * * * *",
        "Europe/Berlin",
        datetime(2026, 3, 28, 23, tzinfo=UTC),
        datetime(2026, 3, 29, 4, tzinfo=UTC),
    )
    assert len(times) == len(set(times))
    assert all(b - a == timedelta(hours=1) for a, b in pairwise(times))


def test_a_one_shot_runs_only_while_ahead() -> None:
    at = datetime(2026, 5, 1, 9, tzinfo=ZoneInfo("Europe/Berlin"))
    assert next_run(cron=None, timezone="UTC", at=at, after=at - timedelta(seconds=1)) == at
    assert next_run(cron=None, timezone="UTC", at=at, after=at) is None


@pytest.mark.parametrize(
    ("expression", "why"),
    [
        ("* * * *", "5-field"),
        ("0 0 * * * *", "5-field"),
        ("61 * * * *", "not a valid"),
        ("0 0 30 2 *", "never runs"),
    ],
)
def test_bad_cron_is_refused_saying_why(expression: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        check_cron(expression)
