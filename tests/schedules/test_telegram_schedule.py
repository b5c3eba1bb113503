"""An operator's one-shot ``[[schedules]]`` job, set a few seconds ahead, arrives in the
Telegram chat (the Bot API fake) with no user message at all; bad jobs are refused
with the file and key."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

from tests.fakes.telegram_api import TelegramFake
from thalos_bot.config.loader import ConfigError, load_settings
from thalos_bot.service.host import open_host

pytestmark = pytest.mark.anyio

USER = 5252


def write(tmp_path: Path, telegram: TelegramFake, schedule: str) -> Path:
    path = tmp_path / "bot.toml"
    path.write_text(
        f"""
state_dir = "state"
[provider]
kind = "scripted"
[channels.console]
enabled = false
[channels.telegram]
enabled = true
base_url = "{telegram.base_url}"
allowed_user_ids = [{USER}]
poll_timeout = 1

[[schedules]]
{schedule}
""",
        encoding="utf-8",
    )
    return path


async def test_a_one_shot_job_delivers_to_telegram_without_a_user_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "123456:TEST-" + secrets.token_hex(16)
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", token)
    at = (datetime.now(UTC) + timedelta(seconds=4)).isoformat(timespec="seconds")
    with TelegramFake(token, per_chat_interval=0.05, burst=3) as telegram:
        telegram.add_chat(USER)  # the user started the bot once; nothing is sent now
        path = write(
            tmp_path,
            telegram,
            f"""id = "wake-up"
at = "{at}"
task = "Good morning from the schedule"
deliver_to = "telegram:{USER}"
principal = "owner"
""",
        )
        async with (
            open_host(load_settings(path), channels=["telegram"]) as host,
            anyio.create_task_group() as group,
        ):
            group.start_soon(host.pump.run, host.sources)
            done = await telegram.wait_for(lambda: telegram.texts(USER) or None, 20)
            host.pump.stop()
        assert done == ["You said: Good morning from the schedule"]
        assert telegram.messages(USER, include_incoming=True) == telegram.messages(USER)
        assert len(telegram.calls("sendMessage", USER)) == 1


JOB = 'id = "a"\ntask = "x"\ndeliver_to = "console"\nprincipal = "p"\n'


@pytest.mark.parametrize(
    ("schedule", "problem"),
    [
        (JOB + 'cron = "0 9 * *"', "schedules[0].cron"),
        (JOB + 'cron = "0 9 * * *"\ntimezone = "Nowhere/Land"', "schedules[0].timezone"),
        (JOB.replace('"console"', '"telegram:me"') + 'cron = "0 9 * * *"', "deliver_to"),
        (JOB + "at = 2026-06-01T09:00:00", "schedules[0].at"),
        (JOB, "exactly one of cron or at"),
        (JOB + 'cron = "0 9 * * *"\nagent = "ghost"', "schedules[0].agent"),
    ],
)
def test_a_bad_job_is_refused_with_file_and_key(
    tmp_path: Path, schedule: str, problem: str
) -> None:
    with TelegramFake("123456:TEST-x") as telegram:
        path = write(tmp_path, telegram, schedule)
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    text = "\n".join(caught.value.problems)
    assert "bot.toml" in text
    assert problem in text, text
