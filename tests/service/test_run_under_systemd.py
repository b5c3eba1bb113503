"""``thalos-bot run`` as systemd runs it: READY only once it receives, watchdog pings from
the pump, and SIGTERM during a streaming answer handled within the grace period."""

from __future__ import annotations

import secrets
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.channels.cli_process import clean_env, command
from tests.fakes.telegram_api import TelegramFake

pytestmark = pytest.mark.slow

USER = 777
LONG_MESSAGE = " ".join(f"word{i}" for i in range(60))  # echoed at ~30 ms a word: ~1.8 s


class NotifySocket:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.messages: list[str] = []

    def wait_for(self, needle: str, timeout: float = 20) -> str:
        deadline = time.monotonic() + timeout
        while True:
            for message in self.messages:
                if needle in message:
                    return message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no {needle!r} in {self.messages}")
            self.sock.settimeout(remaining)
            try:
                self.messages.append(self.sock.recv(4096).decode())
            except TimeoutError:
                continue

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def notify(tmp_path: Path) -> Iterator[NotifySocket]:
    sock = NotifySocket(tmp_path / "notify.sock")
    yield sock
    sock.close()


def start(
    tmp_path: Path, fake: TelegramFake, notify: NotifySocket, grace: str
) -> subprocess.Popen[str]:
    (tmp_path / "bot.toml").write_text(
        f"""
state_dir = "state"
[provider]
kind = "scripted"
[pump]
flush_interval = "0.2s"
shutdown_grace = "{grace}"
[channels.console]
enabled = false
[channels.telegram]
enabled = true
base_url = "{fake.base_url}"
allowed_user_ids = [{USER}]
poll_timeout = 1
""",
        encoding="utf-8",
    )
    env = clean_env(
        {
            "TELEGRAM_BOT_TOKEN": fake.token,
            "NOTIFY_SOCKET": str(notify.path),
            "WATCHDOG_USEC": "2000000",
            "INVOCATION_ID": "test",
        }
    )
    return subprocess.Popen(
        [*command(), "run"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def sigterm_mid_answer(
    tmp_path: Path, notify: NotifySocket, grace: str
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Start, wait for READY, send a long message, SIGTERM once its draft shows; return
    the finished process and the chat's messages as the user sees them."""
    with TelegramFake("123456:TEST-" + secrets.token_hex(12), per_chat_interval=0.05) as fake:
        process = start(tmp_path, fake, notify, grace)
        try:
            ready = notify.wait_for("READY=1")
            assert fake.calls("getUpdates"), "READY came only once the channel was receiving"
            assert "STATUS=serving: telegram" in ready
            notify.wait_for("WATCHDOG=1")
            fake.push_text(USER, USER, LONG_MESSAGE)
            fake.wait_for_blocking(lambda: bool(fake.drafts(USER)), timeout=20)
            process.send_signal(signal.SIGTERM)
            stdout, stderr = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
        notify.wait_for("STOPPING=1")
        texts = fake.texts(USER)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr), texts


def test_sigterm_mid_answer_lets_it_finish_within_the_grace(
    tmp_path: Path, notify: NotifySocket
) -> None:
    result, texts = sigterm_mid_answer(tmp_path, notify, grace="20s")
    assert result.returncode == 0, result.stderr
    assert texts == [f"You said: {LONG_MESSAGE}"], "the whole answer arrived, once"
    assert '"event": "signal_received"' in result.stdout, "JSON lines on stdout under systemd"


def test_sigterm_mid_answer_cancels_after_a_short_grace(
    tmp_path: Path, notify: NotifySocket
) -> None:
    result, texts = sigterm_mid_answer(tmp_path, notify, grace="0.3s")
    assert result.returncode == 0, result.stderr
    assert len(texts) == 2, texts
    answer, notice = texts
    assert answer.startswith("You said: word0")
    assert answer.endswith("[cancelled]")
    assert "word59" not in answer
    assert "restarting" in notice
