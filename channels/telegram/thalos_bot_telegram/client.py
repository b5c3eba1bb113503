"""Building python-telegram-bot's ``Bot`` and starting it up, with the token kept secret.

PTB's HTTP client (httpx) logs every request URL, which contains the token, at INFO;
those loggers are held at WARNING here as well as in the daemon's logging set-up, and
the token is registered with the redactor so no log line, exception text or notice
carries it.
"""

from __future__ import annotations

import anyio
import structlog
from telegram import Bot, BotCommand
from telegram.error import InvalidToken, TelegramError
from telegram.request import HTTPXRequest

from thalos_bot.channels.delivery.failure import Failure
from thalos_bot.channels.notices import COMMANDS
from thalos_bot.channels.pacing.backoff import Backoff
from thalos_bot.channels.ports import EXIT_UNAUTHORIZED, ChannelFatalError
from thalos_bot.channels.secrets import quiet_loggers, secret_from_env
from thalos_bot.domain.unreachable import unreachable_cause
from thalos_bot_telegram import TOKEN_ENV
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.errors import classify, describe

log = structlog.get_logger(__name__)

COMMAND_ATTEMPTS = 5


def read_token() -> str:
    what = "the bot token from @BotFather"
    return secret_from_env(TOKEN_ENV, "telegram", what)


def quiet_transport_loggers() -> None:
    """Keep httpx and PTB below INFO from ever logging (their URLs hold the token)."""
    quiet_loggers(("httpx", "httpcore", "telegram"))


def build_bot(token: str, config: TelegramConfig) -> Bot:
    timeout = config.request_timeout
    request, updates_request = (
        HTTPXRequest(
            connection_pool_size=pool,
            read_timeout=timeout,
            write_timeout=timeout,
            connect_timeout=timeout,
            pool_timeout=timeout,
        )
        for pool in (64, 2)
    )
    base_url = f"{config.base_url}/bot" if config.base_url else "https://api.telegram.org/bot"
    # Files are downloaded from the same server (getFile, then <root>/file/bot<token>/...).
    root = config.base_url or "https://api.telegram.org"
    return Bot(
        token,
        base_url=base_url,
        base_file_url=f"{root}/file/bot",
        request=request,
        get_updates_request=updates_request,
    )


async def start_bot_explained(bot: Bot) -> tuple[str | None, str | None]:
    """Initialise the bot (getMe): its @username, or None and why Telegram cannot be
    reached right now (in words a user can act on, never the exception's text; polling
    will keep trying). A rejected token ends the daemon."""
    try:
        await bot.initialize()
    except InvalidToken:
        await bot.shutdown()
        raise ChannelFatalError(
            f"channels.telegram: Telegram rejected the bot token in {TOKEN_ENV}; copy it "
            "again from @BotFather (/mybots → API Token), and check that base_url, if "
            "set, points at a Bot API server",
            EXIT_UNAUTHORIZED,
        ) from None
    except TelegramError as exc:
        log.warning("telegram_unreachable_at_start", reason=describe(exc))
        return None, unreachable_cause(exc)
    return bot.username, None


def bot_id_of(token: str) -> int | None:
    """The bot's user id: a Bot API token starts with it (``123456:ABC...``)."""
    head = token.partition(":")[0]
    return int(head) if head.isdigit() else None


def known_username(bot: Bot) -> str | None:
    """The bot's @username once getMe has answered, else None."""
    try:
        return bot.username
    except RuntimeError:  # not initialised yet: Telegram was unreachable at start
        return None


async def register_commands(bot: Bot, config: TelegramConfig) -> None:
    """setMyCommands with the six commands, retried a few times in the background."""
    commands = [BotCommand(name, summary[:256]) for name, summary in COMMANDS]
    backoff = Backoff(config.backoff_initial, config.backoff_max)
    for attempt in range(1, COMMAND_ATTEMPTS + 1):
        try:
            await bot.set_my_commands(commands)
        except TelegramError as exc:
            failure = classify(exc)
            if failure.failure in {Failure.REJECTED, Failure.UNAUTHORIZED, Failure.UNSUPPORTED}:
                log.warning("telegram_commands_refused", reason=failure.reason)
                return
            waits = failure.failure is Failure.RETRY_AFTER
            delay = failure.retry_after or 1.0 if waits else backoff.next_delay()
            log.warning(
                "telegram_commands_failed",
                attempt=attempt,
                retry_in=round(delay, 2),
                reason=failure.reason,
            )
            await anyio.sleep(delay)
        else:
            log.info("telegram_commands_registered", commands=[name for name, _ in COMMANDS])
            return
    log.warning("telegram_commands_not_registered", attempts=COMMAND_ATTEMPTS)
