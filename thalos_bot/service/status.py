"""The daemon's status file: what ``thalos-bot status`` reads about a running ``run``.

``run`` keeps ``<state_dir>/daemon.json`` (0600, replaced atomically): its pid, when it
started, whether it is starting, ready, degraded or stopped, a heartbeat from the pump's
tick, and each channel's health. Everything else ``status`` shows (outbox, schedules,
spending) it reads from the database itself, read-only.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import structlog

from thalos_bot import __version__
from thalos_bot.channels.registry import ChannelPair
from thalos_bot.storage.private import FILE_MODE, ensure_private_dir

log = structlog.get_logger(__name__)

STATUS_FILE = "daemon.json"
HEARTBEAT_EVERY = timedelta(seconds=10)
"""How often the tick rewrites the file when nothing else changed."""
STALE_AFTER = timedelta(seconds=90)
"""A heartbeat older than this: the process hangs (the watchdog would restart it)."""

State = Literal["starting", "ready", "degraded", "stopped"]


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _iso(at: datetime | None) -> str | None:
    return None if at is None else at.astimezone(UTC).isoformat()


def _unit_name() -> str | None:
    """The systemd unit this process runs in (from its cgroup), when it runs in one."""
    if "INVOCATION_ID" not in os.environ:
        return None
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            for part in reversed(line.rpartition(":")[2].split("/")):
                if part.endswith(".service"):
                    return part
    return "thalos-bot.service"


class StatusFile:
    """Written by ``run``: at start, at readiness, on the tick (at most every
    :data:`HEARTBEAT_EVERY`), and when it stops."""

    def __init__(
        self,
        state_dir: Path,
        pairs: Sequence[ChannelPair] = (),
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.path = state_dir / STATUS_FILE
        self.pairs = list(pairs)
        """The channels; set once the host has opened them."""
        self._clock = clock
        self._started = clock()
        self._state: State = "starting"
        self._detail = ""
        self._written: datetime | None = None
        self._unit = _unit_name()

    def set(self, state: State, detail: str = "") -> None:
        self._state, self._detail = state, detail
        self.write()

    def tick(self) -> None:
        now = self._clock()
        if self._written is None or now - self._written >= HEARTBEAT_EVERY:
            self.write()

    def snapshot(self) -> dict[str, Any]:
        now = self._clock()
        return {
            "pid": os.getpid(),
            "version": __version__,
            "state": self._state,
            "detail": self._detail,
            "started_at": _iso(self._started),
            "heartbeat_at": _iso(now),
            "systemd_unit": self._unit,
            "channels": [
                {
                    "name": str(pair.adapter.channel_id),
                    "describe": pair.describe,
                    "receiving": pair.receiving.is_set(),
                    "last_ok_at": _iso(pair.health.last_ok_at),
                    "last_error": pair.health.last_error,
                    "last_error_at": _iso(pair.health.last_error_at),
                }
                for pair in self.pairs
            ],
        }

    def write(self) -> None:
        """Replace the file; a failure is logged, never raised (status is a courtesy)."""
        snapshot = self.snapshot()
        temporary = self.path.with_name(f".{STATUS_FILE}.{os.getpid()}")
        try:
            ensure_private_dir(self.path.parent)
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
            with os.fdopen(fd, "w", encoding="utf-8") as stream:
                json.dump(snapshot, stream)
            temporary.replace(self.path)
        except OSError as exc:
            log.warning("status_file_unwritable", path=str(self.path), reason=exc.strerror)
            return
        self._written = self._clock()


@dataclass(frozen=True, slots=True)
class DaemonState:
    """What the status file says, read back, with whether that process still runs."""

    running: bool
    state: str
    detail: str
    pid: int | None
    started_at: datetime | None
    heartbeat_at: datetime | None
    systemd_unit: str | None
    channels: list[dict[str, Any]]
    stale: bool = False
    """The process exists but its heartbeat stopped (hung)."""


def _parse(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, as another user (the service's DynamicUser)
        return True
    return True


def read_status(state_dir: Path, now: datetime | None = None) -> DaemonState | None:
    """The daemon's status, or None when ``run`` never ran with this state folder."""
    try:
        raw = json.loads((state_dir / STATUS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict):
        return None
    pid = raw.get("pid") if isinstance(raw.get("pid"), int) else None
    heartbeat = _parse(raw.get("heartbeat_at"))
    state = str(raw.get("state", "stopped"))
    running = state != "stopped" and pid is not None and _alive(pid)
    stale = running and (heartbeat is None or (now or _utc_now()) - heartbeat > STALE_AFTER)
    channels = raw.get("channels")
    return DaemonState(
        running=running,
        state=state if running or state == "stopped" else "gone",
        detail=str(raw.get("detail", "")),
        pid=pid,
        started_at=_parse(raw.get("started_at")),
        heartbeat_at=heartbeat,
        systemd_unit=raw.get("systemd_unit") if isinstance(raw.get("systemd_unit"), str) else None,
        channels=[c for c in channels if isinstance(c, dict)] if isinstance(channels, list) else [],
        stale=stale,
    )
