"""Real ``thalos-bot run`` replicas for the cluster tests: each its own process, its own
state folder, the same ``bot.toml`` apart from its listener's port, sharing one
PostgreSQL store, taking Telegram's updates by webhook. Their JSON log is copied to a
file as it comes, and a replica counts as started once it logs ``ready``."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import anyio.to_thread

from tests.channels.cli_process import clean_env, command
from tests.cluster.processes import Replica
from tests.cluster.replicas import WEBHOOK_URL, free_port

ALLOWED = (4242, 4343, 4444)
STARTED = 60.0
"""Seconds a replica may take to log ``ready`` (under CPU contention)."""


def daemon_config(telegram_url: str, pg_url: str, port: int, *, lease: float) -> str:
    users = ", ".join(str(u) for u in ALLOWED)
    return f"""
state_dir = "state"
[provider]
kind = "scripted"
[pump]
flush_interval = "0.1s"
shutdown_grace = "10s"
[logging]
format = "json"
[storage]
url = "{pg_url}"
[channels.console]
enabled = false
[channels.telegram]
enabled = true
base_url = "{telegram_url}"
allowed_user_ids = [{users}]
streaming = "edit"
chat_min_interval = "0.05s"
request_timeout = 5
mode = "webhook"
webhook_url = "{WEBHOOK_URL}"
webhook_listen = "127.0.0.1:{port}"
lease_seconds = "{lease}s"
"""


def _copy(stream: subprocess.Popen[bytes], sink: Path, ready: threading.Event) -> None:
    assert stream.stderr is not None
    with stream.stderr, sink.open("ab") as out:
        for line in stream.stderr:
            out.write(line)
            out.flush()
            if b'"event": "ready"' in line:
                ready.set()
    ready.set()  # the process ended: whoever waits looks at it


async def start_daemon(
    tmp: Path, telegram_url: str, pg_url: str, *, lease: float, env: dict[str, str], index: int
) -> Replica:
    """``thalos-bot run`` in ``tmp/replica-<index>``; returns once it logged ``ready``."""
    home = tmp / f"replica-{index}"
    home.mkdir(exist_ok=True)
    port = free_port()
    (home / "bot.toml").write_text(
        daemon_config(telegram_url, pg_url, port, lease=lease), encoding="utf-8"
    )
    log = tmp / f"replica-{index}.log"
    process = subprocess.Popen(
        [*command(), "run"],
        cwd=home,
        env=clean_env(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    ready = threading.Event()
    threading.Thread(target=_copy, args=(process, log, ready), daemon=True).start()
    replica = Replica(process, port, log)
    await anyio.to_thread.run_sync(ready.wait, STARTED)
    if process.poll() is not None or not replica.logged("ready"):
        replica.close()
        raise AssertionError(f"replica {index} did not start: {log.read_text()[-3000:]}")
    return replica
