"""When a schedule runs next, in real (UTC) time, right across DST changes.

A cron expression speaks of wall-clock times in a zone. croniter walks the wall clock
(naive datetimes, so it never does zone arithmetic); :mod:`zoneinfo` turns each wall
time into an instant. On the spring-forward day a wall time inside the gap (02:30 in
Europe/Berlin) maps, with ``fold=0``, to the instant an hour later (03:30 summer time):
the job runs once. On the fall-back day the repeated wall time (02:30 twice) is walked
once and maps to its first instant: the job runs once.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from croniter import CroniterBadDateError, croniter

CRON_FIELDS = 5
MAX_STEPS = 10_000
"""Candidates looked at before a cron is deemed never to run again (e.g. Feb 30)."""


def check_cron(expression: str) -> None:
    """A ``ValueError`` saying why ``expression`` is not a 5-field cron."""
    fields = expression.split()
    if len(fields) != CRON_FIELDS:
        raise ValueError(
            f"{expression!r} is not a 5-field cron (minute hour day month weekday), "
            "e.g. '30 9 * * 1'"
        )
    if not croniter.is_valid(expression):
        raise ValueError(f"{expression!r} is not a valid cron expression")
    if next_cron(expression, "UTC", datetime(2000, 1, 1, tzinfo=UTC)) is None:
        raise ValueError(f"{expression!r} never runs")


def next_cron(expression: str, timezone: str, after: datetime) -> datetime | None:
    """The first instant strictly after ``after`` at which the cron fires, in UTC;
    None when it never fires again."""
    zone = ZoneInfo(timezone)
    after_utc = after.astimezone(UTC)
    wall = after_utc.astimezone(zone).replace(tzinfo=None, fold=0)
    walk = croniter(expression, wall)
    for _ in range(MAX_STEPS):
        try:
            candidate = walk.get_next(datetime)
        except CroniterBadDateError:
            return None
        instant = candidate.replace(tzinfo=zone, fold=0).astimezone(UTC)
        if instant > after_utc:
            return instant
    return None


def next_run(
    *, cron: str | None, timezone: str, at: datetime | None, after: datetime
) -> datetime | None:
    """The next run of a schedule strictly after ``after``: its cron's next instant,
    or its one time if that is still ahead."""
    if cron is not None:
        return next_cron(cron, timezone, after)
    if at is not None and at.astimezone(UTC) > after.astimezone(UTC):
        return at.astimezone(UTC)
    return None
