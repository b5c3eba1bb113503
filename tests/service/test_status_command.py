"""``thalos-bot status`` about a real ``run`` (over the Telegram fake), and readiness
without a network: READY comes with a "degraded" status instead of a start timeout.
The daemon runs as a process; ``status`` runs through ``main`` in this process (a
process each would spend most of a second importing), ``doctor`` as a process."""

from __future__ import annotations

import json
import secrets
import signal
import socket
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.channels.cli_process import clean_env, command, run_piped
from tests.fakes.telegram_api import TelegramFake
from tests.in_process import run_main
from tests.service.test_run_under_systemd import NotifySocket
from thalos_bot.cli.main import main

pytestmark = pytest.mark.slow

USER = 777

Cli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    """``thalos-bot <args>`` in ``cwd``, through ``main``: its output and exit code as
    a process's would be (the environment cleaned as for one)."""
    for name in ("ANTHROPIC_API_KEY", "TELEGRAM_BOT_TOKEN", "THALOS_BOT_CONFIG"):
        monkeypatch.delenv(name, raising=False)

    def run(args: list[str], stdin: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        assert stdin == ""
        with monkeypatch.context() as here:
            here.chdir(cwd)
            return run_main(main, args, capsys)

    return run


@pytest.fixture
def notify(tmp_path: Path) -> Iterator[NotifySocket]:
    sock = NotifySocket(tmp_path / "notify.sock")
    yield sock
    sock.close()


def _config(tmp_path: Path, base_url: str) -> None:
    (tmp_path / "bot.toml").write_text(
        f"""
state_dir = "state"
[provider]
kind = "scripted"
[channels.console]
enabled = false
[channels.telegram]
enabled = true
base_url = "{base_url}"
allowed_user_ids = [{USER}]
poll_timeout = 1
request_timeout = 2
backoff_initial = 0.2
""",
        encoding="utf-8",
    )


def _start(tmp_path: Path, token: str, notify: NotifySocket) -> subprocess.Popen[str]:
    env = clean_env({"TELEGRAM_BOT_TOKEN": token, "NOTIFY_SOCKET": str(notify.path)})
    return subprocess.Popen(
        [*command(), "run"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _status(cli: Cli, tmp_path: Path) -> dict[str, Any]:
    result = cli(["status", "--json"], "", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _stop(process: subprocess.Popen[str]) -> str:
    try:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return stderr


def _status_once(
    cli: Cli, tmp_path: Path, done: Callable[[dict[str, Any]], bool], timeout: float = 20.0
) -> dict[str, Any]:
    """The first status report for which ``done`` holds (the last one after ``timeout``)."""
    deadline = time.monotonic() + timeout
    report = _status(cli, tmp_path)
    while not done(report) and time.monotonic() < deadline:
        time.sleep(0.1)
        report = _status(cli, tmp_path)
    return report


def test_status_before_the_first_start(tmp_path: Path, cli: Cli) -> None:
    _config(tmp_path, "http://127.0.0.1:9")
    report = _status(cli, tmp_path)
    assert report["running"] is False
    assert report["state"] == "never started"
    text = cli(["status"], "", cwd=tmp_path).stdout
    assert "daemon: not running (it has never run with this state folder)" in text


def test_status_of_a_running_daemon_then_a_stopped_one(
    tmp_path: Path, notify: NotifySocket, cli: Cli
) -> None:
    with TelegramFake("123456:TEST-" + secrets.token_hex(12)) as fake:
        _config(tmp_path, fake.base_url)
        process = _start(tmp_path, fake.token, notify)
        try:
            notify.wait_for("READY=1", timeout=60)
            fake.push_text(USER, USER, "hello")
            fake.wait_for_blocking(lambda: bool(fake.texts(USER)), timeout=20)
            # The fake has the answer; its outbox row is marked sent once the reply to
            # that send is handled, a moment later (longer on a loaded machine).
            report = _status_once(cli, tmp_path, lambda r: r["outbox_pending"] == 0)
            assert report["running"] is True
            assert report["pid"] == process.pid
            assert report["state"] == "ready"
            assert report["since"] is not None
            [telegram] = report["channels"]
            assert telegram["name"] == "telegram"
            assert telegram["receiving"] is True
            assert telegram["last_ok_at"] is not None
            assert telegram["last_error"] is None
            assert report["outbox_pending"] == 0
            assert report["today"]["tokens"] > 0, "the echo turn's tokens count today"
            text = cli(["status"], "", cwd=tmp_path).stdout
            assert "daemon: running since" in text
            assert f"pid {process.pid}, ready" in text
            assert "outbox: 0 pending" in text
        finally:
            stderr = _stop(process)
    assert process.returncode == 0, stderr
    after = _status(cli, tmp_path)
    assert after["running"] is False
    assert after["state"] == "stopped"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_no_network_at_boot_is_ready_but_degraded(
    tmp_path: Path, notify: NotifySocket, cli: Cli
) -> None:
    _config(tmp_path, f"http://127.0.0.1:{_closed_port()}")
    process = _start(tmp_path, "123456:TEST-" + secrets.token_hex(12), notify)
    try:
        ready = notify.wait_for("READY=1", timeout=60)
        assert "STATUS=degraded: telegram not reached yet; retrying" in ready
        report = _status(cli, tmp_path)
        assert report["running"] is True
        assert report["state"] == "degraded"
        [telegram] = report["channels"]
        assert telegram["receiving"] is False
        assert telegram["last_ok_at"] is None
        assert telegram["last_error"] == (
            "Telegram unreachable: the connection was refused (nothing listens there)"
        )
        text = cli(["status"], "", cwd=tmp_path).stdout
        assert "degraded (telegram not reached yet; retrying)" in text
        assert "last error: Telegram unreachable" in text
        doctor = run_piped(["doctor", "--offline"], "", cwd=tmp_path, timeout=60).stdout
        assert "! daemon fully ready: degraded: telegram not reached yet; retrying" in doctor
    finally:
        stderr = _stop(process)
    assert process.returncode == 0, stderr


def test_status_reads_spending_and_long_work_from_the_database(tmp_path: Path, cli: Cli) -> None:
    from datetime import UTC, datetime

    from thalos_bot.storage.database import encode_time

    _config(tmp_path, "http://127.0.0.1:9")
    with (tmp_path / "bot.toml").open("a", encoding="utf-8") as config:
        config.write('[limits]\ndaily_tokens = 5000\n[[people]]\nid = "b"\ndaily_cost_usd = 2.0\n')
    (tmp_path / "state").mkdir()
    today = datetime.now(UTC).date().isoformat()
    now = encode_time(datetime.now(UTC))
    with sqlite3.connect(tmp_path / "state" / "thalos.db") as db:
        db.execute(
            "CREATE TABLE usage_daily (principal TEXT, day TEXT, input_tokens INTEGER, "
            "output_tokens INTEGER, cache_read_tokens INTEGER, cache_write_tokens INTEGER, "
            "cost_usd REAL, turns INTEGER)"
        )
        db.execute("INSERT INTO usage_daily VALUES ('a', ?, 1000, 200, 0, 0, 0.5, 2)", (today,))
        db.execute("INSERT INTO usage_daily VALUES ('b', ?, 300, 0, 0, 0, 0.25, 1)", (today,))
        db.execute("INSERT INTO usage_daily VALUES ('a', '2020-01-01', 9, 9, 9, 9, 9, 9)")
        # The progress module's table (thalos_bot/storage/progress.py on its branch).
        db.execute(
            "CREATE TABLE task_progress (task TEXT PRIMARY KEY, state TEXT, done INTEGER, "
            "total INTEGER, detail TEXT, pid INTEGER, started_at TEXT, updated_at TEXT)"
        )
        db.execute(
            "INSERT INTO task_progress VALUES ('memory-reindex', 'running', 120, 500, 'full', "
            "1, ?, ?)",
            (now, now),
        )
    report = _status(cli, tmp_path)
    assert report["today"]["tokens"] == 1500
    assert report["today"]["cost_usd"] == 0.75
    assert report["tasks"][0]["task"] == "memory-reindex"
    text = cli(["status"], "", cwd=tmp_path).stdout
    assert f"today ({today}, UTC): 1,500 tokens, about $0.75" in text
    assert "  a: 1,200 of 5,000 tokens, $0.50\n" in text, "each person against their limits"
    assert "  b: 300 of 5,000 tokens, $0.25 of $2.00" in text
    assert report["today"]["people"][1] == {
        "person": "b",
        "tokens": 300,
        "cost_usd": 0.25,
        "daily_tokens": 5000,
        "daily_cost_usd": 2.0,
    }
    assert "task memory-reindex: running, 120 of 500, full" in text
