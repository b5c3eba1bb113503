"""The Telegram channel inside the real ``thalos-bot run`` process, and its start-up
checks: configuration, token."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from tests.channels.cli_process import clean_env, command, run_piped
from tests.daemon_config import telegram_daemon_config
from tests.fakes.telegram_api import TelegramFake
from tests.telegram.harness import USER, fake_token
from thalos_bot.channels.ports import EXIT_PLATFORM_SETTING, EXIT_UNAUTHORIZED
from thalos_bot.channels.registry import validate_channels
from thalos_bot.config.loader import ConfigError
from thalos_bot.config.models import Settings
from thalos_bot_telegram import TOKEN_ENV

pytestmark = pytest.mark.slow


def write_config(tmp_path: Path, fake: TelegramFake, extra: str = "") -> Path:
    path = tmp_path / "bot.toml"
    path.write_text(
        telegram_daemon_config(fake.base_url, USER, telegram=f'conflict_backoff = "50ms"\n{extra}'),
        encoding="utf-8",
    )
    return path


def test_run_answers_in_telegram_and_stops_cleanly(tmp_path: Path, fake: TelegramFake) -> None:
    write_config(tmp_path, fake)
    process = subprocess.Popen(
        [*command(), "run"],
        cwd=tmp_path,
        env=clean_env({TOKEN_ENV: fake.token}),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        fake.wait_for_blocking(lambda: fake.polling, timeout=20)
        fake.push_text(USER, USER, "hello from the phone")
        fake.wait_for_blocking(lambda: fake.texts(USER) == ["You said: hello from the phone"], 20)
    finally:
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=20)
    assert process.returncode == 0, stderr
    assert fake.token not in stdout + stderr
    assert "telegram_commands_registered" in stderr
    assert "polling as @thalos_test_bot" in stderr


def test_run_exits_with_the_conflict_code(tmp_path: Path, fake: TelegramFake) -> None:
    fake.fail_next("getUpdates", 409, times=100)
    write_config(tmp_path, fake, "conflict_retries = 2")
    result = run_piped(["run"], "", cwd=tmp_path, env={TOKEN_ENV: fake.token}, timeout=30)
    assert result.returncode == EXIT_PLATFORM_SETTING, result.stderr
    assert "error: telegram: 409 Conflict from getUpdates persisted after 2 retries" in (
        result.stderr
    )
    assert fake.token not in result.stdout + result.stderr


def test_run_without_a_token_names_the_variable(tmp_path: Path, fake: TelegramFake) -> None:
    write_config(tmp_path, fake)
    result = run_piped(["run"], "", cwd=tmp_path, timeout=30)
    assert result.returncode == 2, result.stderr
    assert f"error: channels.telegram: {TOKEN_ENV} is not set" in result.stderr
    assert fake.calls() == []


def test_run_with_a_rejected_token_does_not_print_it(tmp_path: Path, fake: TelegramFake) -> None:
    write_config(tmp_path, fake)
    wrong = fake_token()
    result = run_piped(["run"], "", cwd=tmp_path, env={TOKEN_ENV: wrong}, timeout=30)
    assert result.returncode == EXIT_UNAUTHORIZED, result.stderr
    assert "error: channels.telegram: Telegram rejected the bot token" in result.stderr
    assert wrong not in result.stdout + result.stderr


@pytest.mark.parametrize(
    "section",
    [{"enabled": True}, {"enabled": True, "allowed_user_ids": []}],
    ids=["missing", "empty"],
)
def test_allowed_users_must_be_listed(section: dict[str, object]) -> None:
    settings = Settings(channels={"telegram": section})
    with pytest.raises(ConfigError) as caught:
        validate_channels(settings, "bot.toml")
    (problem,) = caught.value.problems
    assert problem.startswith("bot.toml: channels.telegram.allowed_user_ids: list the Telegram")
    assert "never means everyone" in problem


def test_unknown_keys_and_bad_values_are_named() -> None:
    settings = Settings(
        channels={
            "telegram": {
                "allowed_user_ids": [1],
                "streamng": "edit",
                "streaming": "fast",
                "poll_timeout": 30,
                "stall_timeout": 10,
            }
        }
    )
    with pytest.raises(ConfigError) as caught:
        validate_channels(settings, "bot.toml")
    text = "\n".join(caught.value.problems)
    assert "channels.telegram.streamng: unknown key (did you mean 'streaming'?)" in text
    assert "channels.telegram.streaming:" in text
