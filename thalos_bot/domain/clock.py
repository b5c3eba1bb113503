"""The one wall clock of the daemon: timezone-aware UTC. Injected wherever time matters,
so tests can use a controllable clock instead."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def utc_now() -> datetime:
    return datetime.now(UTC)


def ago(delta: timedelta) -> str:
    """``delta`` as "3 hours ago" (whole days, hours or minutes; "a moment ago" under one)."""
    seconds = max(0, int(delta.total_seconds()))
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'' if count == 1 else 's'} ago"
    return "a moment ago"
