"""``thalos-bot doctor``'s Telegram lines against the fake: getMe, and whether a webhook
would make long polling fail (or, in webhook mode, whether Telegram reaches it)."""

from __future__ import annotations

import socket

import pytest

from tests.fakes.telegram_api import TelegramFake
from thalos_bot_telegram import TOKEN_ENV
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.doctor import telegram_checks

pytestmark = pytest.mark.anyio


HOOK = "https://bot.example.com/telegram"


def config(fake: TelegramFake) -> TelegramConfig:
    return TelegramConfig(base_url=fake.base_url)


async def test_a_reachable_bot_without_a_webhook_passes(fake: TelegramFake) -> None:
    checks = await telegram_checks(config(fake), offline=False)
    assert [(c.name, c.outcome) for c in checks] == [
        ("Telegram getMe", "ok"),
        ("Telegram webhook not set", "ok"),
    ]


async def test_a_webhook_set_fails_with_the_fix(fake: TelegramFake) -> None:
    fake.set_webhook("https://bot.example.com/telegram")
    me, webhook = await telegram_checks(config(fake), offline=False)
    assert me.outcome == "ok"
    assert (webhook.outcome, webhook.detail) == (
        "fail",
        "a webhook is set, so long polling would get 409 Conflict",
    )
    assert "deleteWebhook" in webhook.fix


async def test_in_webhook_mode_no_webhook_yet_passes(fake: TelegramFake) -> None:
    hooked = TelegramConfig(base_url=fake.base_url, mode="webhook", webhook_url=HOOK)
    _, webhook = await telegram_checks(hooked, offline=False)
    assert (webhook.name, webhook.outcome) == ("Telegram webhook", "ok")
    assert webhook.detail == "webhook_url is set when the bot starts"


async def test_in_webhook_mode_a_failing_delivery_is_a_warning_in_telegrams_words(
    fake: TelegramFake,
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    fake.webhooks.route(f"http://127.0.0.1:{port}")  # nothing listens there
    fake.set_webhook(HOOK)
    fake.push_text(4242, 4242, "hello?")
    await fake.wait_for(lambda: fake.webhooks.attempts, 10)
    hooked = TelegramConfig(base_url=fake.base_url, mode="webhook", webhook_url=HOOK)
    _, webhook = await telegram_checks(hooked, offline=False)
    assert (webhook.outcome, webhook.detail) == (
        "warn",
        "Telegram's last delivery failed: Connection refused",
    )


async def test_a_rejected_token_is_said_with_where_to_get_one(
    fake: TelegramFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "123456:" + "x" * 35)
    (check,) = await telegram_checks(config(fake), offline=False)
    assert (check.name, check.outcome) == ("Telegram getMe", "fail")
    assert TOKEN_ENV in check.detail
    assert "@BotFather" in check.fix
    # A getMe that failed still closes the connection it used (PTB's Bot.shutdown
    # closes the requests initialize() opened before getMe, whatever getMe did).
    assert fake.connections[0] >= 1
    await fake.wait_for(lambda: fake.connections[1] == 0)
