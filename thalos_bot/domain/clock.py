"""The one wall clock of the daemon: timezone-aware UTC. Injected wherever time matters,
so tests can use a controllable clock instead."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    return datetime.now(UTC)
