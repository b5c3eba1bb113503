"""Schedules in words, for the model's tool results, ``/status`` and the CLI."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from thalos_bot.channels.notices import format_duration
from thalos_bot.domain.schedule import Schedule

TASK_PREVIEW = 60


def when(at: datetime, timezone: str, now: datetime) -> str:
    """``Tue 1 Dec 2026 09:30 CET (in 2h 5m)``."""
    local = at.astimezone(ZoneInfo(timezone))
    stamp = f"{local:%a} {local.day} {local:%b %Y %H:%M} {local.tzname() or timezone}"
    ahead = at - now
    return f"{stamp} (in {format_duration(ahead)})" if ahead.total_seconds() > 0 else stamp


def preview(task: str) -> str:
    flat = " ".join(task.split())
    return flat if len(flat) <= TASK_PREVIEW else flat[: TASK_PREVIEW - 1] + "…"


def describe(schedule: Schedule, now: datetime) -> str:
    """One line: id, timing, next run, and the start of the task."""
    next_text = (
        when(schedule.next_run, schedule.timezone, now)
        if schedule.next_run is not None
        else schedule.state
    )
    return f"{schedule.id}: {schedule.timing}, next {next_text} — {preview(schedule.task)}"


def pending_line(schedules: list[Schedule], now: datetime) -> str | None:
    """The ``/status`` line for a conversation's pending schedules, if it has any."""
    if not schedules:
        return None
    soonest = schedules[0]
    assert soonest.next_run is not None  # active schedules always have one
    count = len(schedules)
    plural = "schedule" if count == 1 else "schedules"
    return (
        f"Scheduled: {count} pending {plural}; next {soonest.id} "
        f"{when(soonest.next_run, soonest.timezone, now)}"
    )
