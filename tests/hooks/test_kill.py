"""A hook's run across a crash: the real daemon (``thalos-bot run``), killed with
SIGKILL while the run is in flight, restarted on the same state directory: the run is
taken back and its answer arrives in the Telegram chat exactly once."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.channels.cli_process import clean_env, command
from tests.fakes.telegram_api import TelegramFake
from tests.hooks.harness import (
    GENERIC_ENV,
    GITHUB_ENV,
    USER,
    github_headers,
    hook_rows,
    hooks_config,
    issue_payload,
    new_secret,
)
from tests.ports import free_port
from thalos_bot_telegram import TOKEN_ENV

pytestmark = pytest.mark.slow


def _start(folder: Path, fake: TelegramFake, env: dict[str, str]) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [*command(), "run"],
        cwd=folder,
        env=clean_env({TOKEN_ENV: fake.token, **env}),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        fake.wait_for_blocking(lambda: fake.polling, timeout=30)
    except BaseException:
        process.kill()
        process.communicate(timeout=20)
        raise
    return process


def _wait_for_state(folder: Path, fake: TelegramFake, state: str) -> None:
    """Until the one delivery's row is in ``state`` (read between the fake's calls: the
    daemon long-polls it about every second)."""
    fake.wait_for_blocking(
        lambda: [s for _, s, _ in hook_rows(folder / "state")] == [state], timeout=30
    )


def test_a_run_killed_midway_is_resumed_and_delivered_once(tmp_path: Path) -> None:
    secret = new_secret()
    env = {GITHUB_ENV: secret, GENERIC_ENV: new_secret()}
    port = free_port()
    with TelegramFake("123456:TEST-" + new_secret(), per_chat_interval=0.05) as fake:
        fake.add_chat(USER)
        (tmp_path / "bot.toml").write_text(
            hooks_config(fake.base_url, port, telegram="request_timeout = 1"), encoding="utf-8"
        )
        process = _start(tmp_path, fake, env)
        body = issue_payload()
        response = httpx.post(
            f"http://127.0.0.1:{port}/hooks/github",
            content=body,
            headers=github_headers(secret, body),
            timeout=10,
        )
        assert response.status_code == 202, response.text
        # The scripted model echoes the task word by word: the run is in flight.
        _wait_for_state(tmp_path, fake, "running")
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=20)
        assert process.returncode == -signal.SIGKILL
        assert fake.texts(USER) == []

        process = _start(tmp_path, fake, env)
        try:
            texts = fake.wait_for_blocking(lambda: fake.texts(USER), timeout=60)
            _wait_for_state(tmp_path, fake, "done")
        finally:
            process.send_signal(signal.SIGTERM)
            _, stderr = process.communicate(timeout=30)
        assert process.returncode == 0, stderr
        assert len(texts) == 1
        assert texts[0].startswith("You said: Summarise new issue")
        assert fake.texts(USER) == texts
        assert hook_rows(tmp_path / "state") == [("github", "done", 2)]
