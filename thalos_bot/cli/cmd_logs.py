"""``thalos-bot logs [-f] [--since WHEN]``: the daemon's log lines, wherever they went.

Under systemd the log is the journal: the unit the daemon last ran in (its status file
names it) is read with ``journalctl``. Otherwise it is the state folder's ``chat.log``
(JSON lines, written whenever the console owns the terminal) and the offline chat's
(``offline/chat.log``), merged in time order and shown one event a line. ``-f`` starts
from the last :data:`TAIL` events, as ``tail -f`` does, unless ``--since`` says where.
"""

from __future__ import annotations

import argparse
import heapq
import json
import re
import shutil
import subprocess
import sys
import time
from collections import deque
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TextIO

from thalos_bot.config.loader import ConfigError, load_settings
from thalos_bot.service.status import read_status

LOG_FILE = "chat.log"
"""``cmd_serve.LOG_FILE``, named again so this command does not import the daemon."""
OFFLINE_DIR = "offline"
"""``cmd_serve.OFFLINE_DIR``: where ``chat --offline`` keeps its state and its log."""
TAIL = 10
"""The events ``-f`` shows before it follows (without ``--since``)."""
FOLLOW_EVERY = 0.5
"""Seconds between looks at a followed file (``tail -f`` does the same)."""
_SPAN = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|min|h|d)$")
_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def parse_since(text: str, now: datetime) -> datetime:
    """``30m``, ``2h``, ``1d`` back from ``now``; or a time (UTC unless it says)."""
    span = _SPAN.match(text.strip())
    if span is not None:
        return now - timedelta(seconds=float(span.group(1)) * _UNITS[span.group(2)])
    try:
        at = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ConfigError(
            [f"--since: {text!r} is neither a duration (30m, 2h, 1d) nor a time (2026-12-01 09:00)"]
        ) from None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def run(args: argparse.Namespace) -> int:
    loaded = load_settings(args.config)
    now = datetime.now(UTC)
    since = parse_since(args.since, now) if args.since else None
    daemon = read_status(loaded.state_dir, now)
    journalctl = shutil.which("journalctl")
    if daemon is not None and daemon.systemd_unit and journalctl:
        command = [journalctl, "--no-pager", "-o", "cat", "-u", daemon.systemd_unit]
        if since is not None:
            command += ["--since", f"{since.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"]
        if args.follow:
            command.append("--follow")
        return subprocess.run(command, check=False).returncode  # noqa: S603
    log_file = loaded.state_dir / LOG_FILE
    files = [f for f in (log_file, loaded.state_dir / OFFLINE_DIR / LOG_FILE) if f.exists()]
    if not files:
        print(
            f"no log yet at {log_file}: `run` under systemd logs to the journal, `run` "
            "without a console to stderr, and `chat` (or `run` with the console in a "
            "terminal) to that file",
            file=sys.stderr,
        )
        return 1
    streams = [f.open(encoding="utf-8", errors="replace") for f in files]
    try:
        merged = heapq.merge(*streams, key=_order)
        if args.follow and since is None:
            _show(deque(merged, maxlen=TAIL), None)
        else:
            _show(merged, since)
        if args.follow:
            _follow(streams, since)
    finally:
        for stream in streams:
            stream.close()
    return 0


def _order(line: str) -> str:
    """A line's place in time (its ISO timestamp; "" for a line without one)."""
    found = _STAMP.search(line)
    at = _time(found.group(1)) if found else None
    return at.isoformat() if at is not None else ""


_STAMP = re.compile(r'"timestamp":\s*"([^"]+)"')


def _show(lines: Iterable[str], since: datetime | None) -> None:
    for line in lines:
        shown = render(line, since)
        if shown is not None:
            print(shown, flush=True)


def _follow(streams: Sequence[TextIO], since: datetime | None) -> None:
    """Print lines as they are appended to any of ``streams``, until Ctrl-C (main turns
    it into exit 130)."""
    partial = ["" for _ in streams]
    while True:
        quiet = True
        for index, stream in enumerate(streams):
            chunk = stream.readline()
            if not chunk:
                continue
            quiet = False
            partial[index] += chunk
            if partial[index].endswith("\n"):
                _show([partial[index]], since)
                partial[index] = ""
        if quiet:
            time.sleep(FOLLOW_EVERY)


def render(line: str, since: datetime | None = None) -> str | None:
    """One JSON log line as ``time level event key=value ...``; None when it is before
    ``since`` (or blank). A line that is not JSON is shown as it is."""
    text = line.rstrip("\n")
    if not text.strip():
        return None
    try:
        event = json.loads(text)
    except ValueError:
        return text
    if not isinstance(event, dict):
        return text
    stamp = event.pop("timestamp", None)
    at = _time(stamp)
    if since is not None and at is not None and at < since:
        return None
    level = str(event.pop("level", "")).upper()
    name = str(event.pop("event", ""))
    event.pop("logger", None)
    fields = " ".join(f"{key}={_value(value)}" for key, value in event.items())
    when = f"{at:%Y-%m-%d %H:%M:%S}" if at is not None else str(stamp or "-")
    return " ".join(part for part in (when, f"{level:<7}", name, fields) if part)


def _time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _value(value: object) -> str:
    if isinstance(value, str):
        return value if value and " " not in value else json.dumps(value)
    return json.dumps(value)
