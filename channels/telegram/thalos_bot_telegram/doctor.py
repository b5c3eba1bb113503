"""``thalos-bot doctor`` checks for the Telegram channel: the token, getMe, no webhook."""

from __future__ import annotations

import os

from telegram.error import InvalidToken, NetworkError, TelegramError

from thalos_bot.channels.checks import Check, skipped
from thalos_bot.domain.unreachable import unreachable_cause
from thalos_bot_telegram import TOKEN_ENV
from thalos_bot_telegram.client import build_bot
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.errors import describe


async def telegram_checks(config: TelegramConfig, *, offline: bool) -> list[Check]:
    if (skip := skipped("Telegram getMe and webhook", TOKEN_ENV, offline=offline)) is not None:
        return [skip]
    token = os.environ[TOKEN_ENV].strip()
    bot = build_bot(token, config)
    checks: list[Check] = []
    try:
        me = await bot.get_me()
        checks.append(Check("Telegram getMe", "ok", f"@{me.username} (id {me.id})"))
        info = await bot.get_webhook_info()
        if info.url:
            checks.append(
                Check(
                    "Telegram webhook not set",
                    "fail",
                    "a webhook is set, so long polling would get 409 Conflict",
                    "remove it with the Bot API's deleteWebhook if this bot should poll",
                )
            )
        else:
            checks.append(Check("Telegram webhook not set", "ok"))
    except InvalidToken:
        checks.append(
            Check(
                "Telegram getMe",
                "fail",
                f"Telegram rejected the token in {TOKEN_ENV}",
                "copy the token again from @BotFather (/mybots → API Token)",
            )
        )
    except NetworkError as exc:
        where = config.base_url or "https://api.telegram.org"
        checks.append(
            Check(
                "Telegram getMe",
                "fail",
                f"cannot reach {where}: {unreachable_cause(exc)}",
                "check the network and any proxy (HTTPS_PROXY), or base_url if set",
            )
        )
    except TelegramError as exc:
        checks.append(
            Check(
                "Telegram getMe",
                "fail",
                describe(exc),
                "see the line above; `thalos-bot telegram pair` tries the token too",
            )
        )
    finally:
        await bot.shutdown()
    return checks
