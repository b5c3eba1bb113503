"""What ``thalos-bot telegram pair`` does: the kit's flow
(:func:`~thalos_bot.channels.admission.pair_command.pair_with`) around Telegram's part, a
temporary long poll with the bot's token for a private message holding the kit's
one-time code. Nobody is ever answered: a wrong code, a stranger, a group message are
all ignored without a word, exactly as the running bot ignores strangers. Every update
read is acknowledged before pairing ends, so the daemon never sees (and answers) them.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import structlog
from telegram import Bot, Update
from telegram.constants import ChatType
from telegram.error import TelegramError

from thalos_bot.channels.admission import pair_command as kit
from thalos_bot.channels.admission.pairing import PairingCode, PairingError
from thalos_bot.channels.delivery.failure import Failure
from thalos_bot.channels.pacing.backoff import Backoff
from thalos_bot.channels.ports import EXIT_CONFIG, ChannelFatalError
from thalos_bot_telegram import TOKEN_ENV
from thalos_bot_telegram.client import (
    build_bot,
    quiet_transport_loggers,
    read_token,
    start_bot_explained,
)
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.errors import classify
from thalos_bot_telegram.manifest import manifest

__all__ = ["pair"]
log = structlog.get_logger(__name__)

TOKEN_SHAPE = re.compile(r"\d{3,}:[A-Za-z0-9_-]{20,}")
"""What @BotFather hands out (``123456789:AAE...``): refused before any network call."""


@dataclass
class TelegramSide:
    config: TelegramConfig
    bot: Bot

    async def reach(self) -> str:
        username, cause = await start_bot_explained(self.bot)
        if username is None:
            where = self.config.base_url or "https://api.telegram.org"
            raise PairingError(
                f"Telegram cannot be reached at {where}: {cause}; "
                "check the network (or base_url), then try again"
            )
        return f"@{username} in a private chat"

    async def wait(self, code: PairingCode) -> kit.Found | None:
        """Long-poll until someone sends ``code`` in a private chat; None once it expired.
        Raises :class:`PairingError` when Telegram refuses the token or another poller
        holds it."""
        backoff = Backoff(1.0, 10.0)
        timeout = self.config.request_timeout
        offset: int | None = None
        try:
            while not code.expired:
                wait = max(0, min(int(self.config.poll_timeout), int(code.remaining)))
                try:
                    updates = await self.bot.get_updates(
                        offset=offset,
                        timeout=wait,
                        allowed_updates=["message"],
                        read_timeout=timeout,  # PTB adds the poll timeout
                    )
                except TelegramError as exc:
                    await _after_failure(exc, backoff)
                    continue
                backoff.reset()
                for update in updates:
                    offset = update.update_id + 1
                    found = _sender(update, code)
                    if found is not None:
                        return found
            return None
        finally:
            if offset is not None:  # confirm every update read: none reaches the daemon
                with anyio.CancelScope(shield=True):
                    try:
                        await self.bot.get_updates(offset=offset, timeout=0, read_timeout=timeout)
                    except TelegramError as exc:
                        log.warning("telegram_pairing_ack_failed", reason=classify(exc).reason)

    async def tell(self, found: kit.Found) -> bool:
        """Say so in the chat too: the person who sent the code sees that it worked."""
        assert isinstance(found.person, int)
        return await kit.told(self.bot.send_message(found.person, kit.PAIRED), TelegramError)


def _sender(update: Update, code: PairingCode) -> kit.Found | None:
    """Who sent ``code`` in a private chat, if this update is that."""
    message = update.message
    if message is None or message.chat.type != ChatType.PRIVATE or message.text is None:
        return None
    user = message.from_user
    if user is None or user.is_bot:
        return None
    if not code.redeem(message.text):
        log.debug("telegram_pairing_ignored", update_id=update.update_id)
        return None
    name = " ".join(part for part in (user.first_name, user.last_name) if part)
    handle = f" (@{user.username})" if user.username else ""
    return kit.Found(user.id, f"{name}{handle}, user id {user.id}")


async def _after_failure(exc: TelegramError, backoff: Backoff) -> None:
    failure = classify(exc)
    if failure.failure is Failure.UNAUTHORIZED:
        raise PairingError(
            f"Telegram rejected the bot token in {TOKEN_ENV}; copy it again from "
            "@BotFather (/mybots → API Token)"
        )
    if failure.failure is Failure.CONFLICT:
        raise PairingError(
            "another program is receiving this bot's messages (a running thalos-bot, or a "
            "webhook); stop it while pairing, e.g. `systemctl stop thalos-bot`"
        )
    delay = failure.retry_after if failure.failure is Failure.RETRY_AFTER else None
    delay = delay or backoff.next_delay()
    log.warning("telegram_pairing_poll_failed", reason=failure.reason, retry_in=round(delay, 2))
    await anyio.sleep(delay)


@asynccontextmanager
async def _side(config: TelegramConfig) -> AsyncIterator[TelegramSide]:
    """What pairing uses of the ``[channels.telegram]`` settings: base_url, timeouts."""
    token = read_token()
    if not TOKEN_SHAPE.fullmatch(token):
        raise ChannelFatalError(
            f"{TOKEN_ENV} does not look like a bot token (digits, a colon, then about 35 "
            "letters, digits, - or _); copy it again from @BotFather (/mybots → API Token)",
            EXIT_CONFIG,
        )
    quiet_transport_loggers()
    bot = build_bot(token, config)
    try:
        yield TelegramSide(config, bot)
    finally:
        await bot.shutdown()


pair = kit.pair_command(_side, manifest)
"""Pair, then add the sender to the ``bot.toml`` named. Returns the process exit code."""
