"""``thalos-bot doctor``'s Telegram lines against the fake: getMe, and whether a webhook
would make long polling fail."""

from __future__ import annotations

import pytest

from tests.fakes.telegram_api import TelegramFake
from thalos_bot_telegram import TOKEN_ENV
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.doctor import telegram_checks

pytestmark = pytest.mark.anyio


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


async def test_a_rejected_token_is_said_with_where_to_get_one(
    fake: TelegramFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "123456:" + "x" * 35)
    (check,) = await telegram_checks(config(fake), offline=False)
    assert (check.name, check.outcome) == ("Telegram getMe", "fail")
    assert TOKEN_ENV in check.detail
    assert "@BotFather" in check.fix
