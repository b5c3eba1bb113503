"""``thalos-bot logs``: the chat log rendered one event a line (``--since``, ``-f``),
and the journal of the daemon's unit under systemd."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.channels.cli_process import clean_env, command, run_piped
from thalos_bot.cli.cmd_logs import LOG_FILE, OFFLINE_DIR, TAIL, render
from thalos_bot.cli.cmd_serve import LOG_FILE as SERVE_LOG_FILE
from thalos_bot.cli.cmd_serve import OFFLINE_DIR as SERVE_OFFLINE_DIR

pytestmark = pytest.mark.slow

CONFIG = 'state_dir = "state"\n[provider]\nkind = "scripted"\n'


def _line(at: datetime, event: str, **fields: object) -> str:
    return json.dumps(
        {"event": event, "level": "warning", "logger": "x", "timestamp": at.isoformat(), **fields}
    )


def _write_log(tmp_path: Path, *lines: str) -> Path:
    (tmp_path / "bot.toml").write_text(CONFIG)
    log = tmp_path / "state" / LOG_FILE
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("".join(line + "\n" for line in lines))
    return log


def test_the_log_file_is_the_one_chat_writes() -> None:
    assert LOG_FILE == SERVE_LOG_FILE
    assert OFFLINE_DIR == SERVE_OFFLINE_DIR


def test_since_keeps_only_recent_lines_rendered(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    _write_log(
        tmp_path,
        _line(now - timedelta(hours=3), "old_event"),
        _line(now - timedelta(minutes=5), "telegram_poll_failed", attempt=2, reason="no route"),
        "a line that is not JSON",
    )
    result = run_piped(["logs", "--since", "1h"], "", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "old_event" not in result.stdout
    assert lines[0].endswith('WARNING telegram_poll_failed attempt=2 reason="no route"')
    assert lines[1] == "a line that is not JSON"
    everything = run_piped(["logs"], "", cwd=tmp_path)
    assert "old_event" in everything.stdout


def test_the_offline_chats_log_is_shown_too_in_time_order(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    _write_log(
        tmp_path,
        _line(now - timedelta(minutes=9), "first_with_the_model"),
        _line(now - timedelta(minutes=1), "third_with_the_model"),
    )
    offline = tmp_path / "state" / OFFLINE_DIR / LOG_FILE
    offline.parent.mkdir()
    offline.write_text(_line(now - timedelta(minutes=5), "second_offline") + "\n")
    result = run_piped(["logs"], "", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    events = [line.split()[3] for line in result.stdout.splitlines()]
    assert events == ["first_with_the_model", "second_offline", "third_with_the_model"]


def test_a_bad_since_is_a_usage_error(tmp_path: Path) -> None:
    _write_log(tmp_path)
    result = run_piped(["logs", "--since", "yesterday-ish"], "", cwd=tmp_path)
    assert result.returncode == 2
    assert "is neither a duration (30m, 2h, 1d) nor a time" in result.stderr
    assert "Traceback" not in result.stderr


def test_follow_prints_lines_as_they_are_written(tmp_path: Path) -> None:
    early = [_line(datetime.now(UTC), f"early{n}") for n in range(TAIL + 5)]
    log = _write_log(tmp_path, *early, _line(datetime.now(UTC), "first"))
    process = subprocess.Popen(
        [*command(), "logs", "-f"],
        cwd=tmp_path,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    seen = b""
    try:
        deadline = time.monotonic() + 60
        appended = False
        while b"second" not in seen:
            if b"first" in seen and not appended:
                with log.open("a") as stream:
                    stream.write(_line(datetime.now(UTC), "second") + "\n")
                appended = True
            assert time.monotonic() < deadline, seen
            ready, _, _ = select.select([process.stdout], [], [], 1)
            if ready:
                seen += os.read(process.stdout.fileno(), 4096)
    finally:
        process.terminate()
        process.communicate(timeout=30)
    assert b"first" in seen
    shown = [line.split()[3] for line in seen.decode().splitlines()]
    last = [f"early{n}" for n in range(6, TAIL + 5)] + ["first"]
    assert shown[:TAIL] == last, "like tail -f: the last lines first, then what comes"
    assert "early5" not in shown


def test_under_systemd_it_reads_the_units_journal(tmp_path: Path) -> None:
    (tmp_path / "bot.toml").write_text(CONFIG)
    state = tmp_path / "state"
    state.mkdir()
    (state / "daemon.json").write_text(
        json.dumps({"pid": 1, "state": "stopped", "systemd_unit": "thalos-bot.service"})
    )
    tools = tmp_path / "bin"
    tools.mkdir()
    fake = tools / "journalctl"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$0.args"\n')
    fake.chmod(0o755)
    path = f"{tools}{os.pathsep}{os.environ['PATH']}"
    result = run_piped(
        ["logs", "-f", "--since", "2026-12-01 09:00"], "", cwd=tmp_path, env={"PATH": path}
    )
    assert result.returncode == 0, result.stderr
    args = (tools / "journalctl.args").read_text().splitlines()
    assert args == [
        "--no-pager",
        "-o",
        "cat",
        "-u",
        "thalos-bot.service",
        "--since",
        "2026-12-01 09:00:00 UTC",
        "--follow",
    ]


def test_render_keeps_fields_in_order() -> None:
    line = _line(datetime(2026, 12, 1, 9, 0, tzinfo=UTC), "ready", channels=["telegram"])
    assert render(line) == '2026-12-01 09:00:00 WARNING ready channels=["telegram"]'
