"""``thalos-bot doctor`` checks for the Telegram channel: the token, getMe, the webhook."""

from __future__ import annotations

import os

from telegram import WebhookInfo
from telegram.error import InvalidToken, NetworkError, TelegramError

from thalos_bot.channels.checks import Check, skipped, unreachable
from thalos_bot_telegram import TOKEN_ENV
from thalos_bot_telegram.client import build_bot
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.errors import describe


async def telegram_checks(config: TelegramConfig, *, offline: bool) -> list[Check]:
    if (skip := skipped("Telegram getMe and webhook", TOKEN_ENV, offline=offline)) is not None:
        return [skip]
    bot = build_bot(os.environ[TOKEN_ENV].strip(), config)
    checks: list[Check] = []
    try:
        await bot.initialize()  # getMe; bot.shutdown() closes its connections either way
        checks.append(Check("Telegram getMe", "ok", f"@{bot.username} (id {bot.id})"))
        info = await bot.get_webhook_info()
    except InvalidToken:
        detail = f"Telegram rejected the token in {TOKEN_ENV}"
        fix = "copy the token again from @BotFather (/mybots → API Token)"
    except NetworkError as exc:
        where = config.base_url or "https://api.telegram.org"
        return [*checks, unreachable("Telegram getMe", where, exc)]
    except TelegramError as exc:
        detail = describe(exc)
        fix = "see the line above; `thalos-bot telegram pair` tries the token too"
    else:
        return [*checks, _webhook(config, info)]
    finally:
        await bot.shutdown()
    return [*checks, Check("Telegram getMe", "fail", detail, fix)]


def _webhook(config: TelegramConfig, info: WebhookInfo) -> Check:
    """Polling needs no webhook set; webhook mode sets its own at start (any other is
    replaced), and Telegram says when its last delivery there failed."""
    if config.mode == "polling":
        if not info.url:
            return Check("Telegram webhook not set", "ok")
        detail = "a webhook is set, so long polling would get 409 Conflict"
        fix = "remove it with the Bot API's deleteWebhook if this bot should poll"
        return Check("Telegram webhook not set", "fail", detail, fix)
    if info.url != config.webhook_url:
        return Check("Telegram webhook", "ok", "webhook_url is set when the bot starts")
    if info.last_error_message is None:
        return Check("Telegram webhook", "ok", f"{info.pending_update_count} updates waiting")
    detail = f"Telegram's last delivery failed: {info.last_error_message}"
    fix = "check that webhook_url reaches this bot's webhook_listen (a proxy, TLS)"
    return Check("Telegram webhook", "warn", detail, fix)
