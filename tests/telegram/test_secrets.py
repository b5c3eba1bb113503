"""The bot token never reaches a log line or an error text, whatever happens."""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from tests.fakes.telegram_api import TelegramFake
from tests.telegram.harness import CATALOG, USER, fake_token, make_config, running_bot
from thalos_bot.channels.ports import EXIT_CONFIG, EXIT_UNAUTHORIZED, ChannelFatalError
from thalos_bot.channels.registry import ChannelHost
from thalos_bot.config.models import Settings
from thalos_bot.providers.scripted import Fail, Say, ScriptedProvider
from thalos_bot_telegram import TOKEN_ENV
from thalos_bot_telegram.manifest import manifest as plugin

pytestmark = pytest.mark.anyio


def leaks(
    token: str, logs: list[MutableMapping[str, Any]], caplog: pytest.LogCaptureFixture
) -> list[str]:
    found = [repr(entry) for entry in logs if token in repr(entry)]
    for record in caplog.records:
        text = record.getMessage() + (record.exc_text or "")
        if record.exc_info and record.exc_info[1] is not None:
            text += repr(record.exc_info[1]) + str(record.exc_info[1])
        if token in text:
            found.append(text)
    return found


async def test_no_token_in_logs_across_turns_and_failures(
    fake: TelegramFake, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    provider = ScriptedProvider(
        [
            [Say("A first ", "answer.", delay=0.02)],
            [Say("Half"), Fail("The model fell over.")],
        ]
    )
    fake.drop_next("getUpdates")
    with capture_logs() as logs:
        async with running_bot(fake, provider, request_timeout=0.5) as bot:
            bot.say("one")
            await bot.answer(1)
            fake.fail_next("sendMessage", 429, retry_after=1)
            fake.timeout_next("sendChatAction")
            bot.say("two")
            await bot.answer(2)
            bot.say("/status")
            await bot.answer(3)
            fake.push_message(USER, USER, kind="voice")
            await bot.answer(4)
    assert logs, "something was logged"
    assert any(entry["event"] == "telegram_poll_failed" for entry in logs)
    assert any(entry["event"] == "telegram_flood_wait" for entry in logs)
    assert leaks(fake.token, logs, caplog) == []


async def test_a_rejected_token_is_not_repeated_anywhere(
    fake: TelegramFake,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = fake_token()
    monkeypatch.setenv(TOKEN_ENV, wrong)
    host = ChannelHost.of(Settings(), CATALOG, tmp_path)
    with capture_logs() as logs, pytest.raises(ChannelFatalError) as caught:
        async with plugin.open(make_config(fake), host):
            pass
    assert caught.value.exit_code == EXIT_UNAUTHORIZED
    assert "Telegram rejected the bot token" in caught.value.message
    assert wrong not in caught.value.message
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__, "the PTB error (holding the token) is dropped"
    assert leaks(wrong, logs, caplog) == []
    assert fake.calls("getMe")[0].status == 401


async def test_a_missing_token_is_named(
    monkeypatch: pytest.MonkeyPatch, fake: TelegramFake, tmp_path: Path
) -> None:
    monkeypatch.delenv(TOKEN_ENV)
    host = ChannelHost.of(Settings(), CATALOG, tmp_path)
    with pytest.raises(ChannelFatalError, match=f"{TOKEN_ENV} is not set") as caught:
        async with plugin.open(make_config(fake), host):
            pass
    assert caught.value.exit_code == EXIT_CONFIG == 2
    assert fake.calls() == []
