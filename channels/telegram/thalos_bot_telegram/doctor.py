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
    bot = build_bot(os.environ[TOKEN_ENV].strip(), config)
    checks: list[Check] = []
    try:
        await bot.initialize()  # getMe; and bot.shutdown() then closes its connections
        checks.append(Check("Telegram getMe", "ok", f"@{bot.username} (id {bot.id})"))
        info = await bot.get_webhook_info()
    except InvalidToken:
        detail = f"Telegram rejected the token in {TOKEN_ENV}"
        fix = "copy the token again from @BotFather (/mybots → API Token)"
    except NetworkError as exc:
        detail = f"cannot reach {config.base_url or 'https://api.telegram.org'}: "
        detail += unreachable_cause(exc)
        fix = "check the network and any proxy (HTTPS_PROXY), or base_url if set"
    except TelegramError as exc:
        detail = describe(exc)
        fix = "see the line above; `thalos-bot telegram pair` tries the token too"
    else:
        if not info.url:
            return [*checks, Check("Telegram webhook not set", "ok")]
        detail = "a webhook is set, so long polling would get 409 Conflict"
        fix = "remove it with the Bot API's deleteWebhook if this bot should poll"
        return [*checks, Check("Telegram webhook not set", "fail", detail, fix)]
    finally:
        await bot.shutdown()
    return [*checks, Check("Telegram getMe", "fail", detail, fix)]
