"""Pairing: find the Telegram account of the person setting the bot up.

A temporary long poll with the bot's token waits for a private message holding the
kit's one-time code (:mod:`thalos_bot.channels.admission.pairing`). Nobody is ever
answered: a wrong code, a stranger, a group message are all ignored without a word,
exactly as the running bot ignores strangers. Every update read is acknowledged before
pairing ends, so the daemon never sees (and answers) them.
"""

from __future__ import annotations

import anyio
import structlog
from telegram import Bot, Update
from telegram.constants import ChatType
from telegram.error import TelegramError

from thalos_bot.channels.admission.pair_command import Found
from thalos_bot.channels.admission.pairing import PairingCode, PairingError
from thalos_bot.channels.delivery.failure import Failure
from thalos_bot.channels.pacing.backoff import Backoff
from thalos_bot_telegram.errors import classify

log = structlog.get_logger(__name__)


def _sender(update: Update, code: PairingCode) -> Found | None:
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
    return Found(user.id, f"{name}{handle}, user id {user.id}")


async def wait_for_code(
    bot: Bot,
    code: PairingCode,
    *,
    poll_timeout: float,
    request_timeout: float,
    backoff: Backoff | None = None,
) -> Found | None:
    """Long-poll until someone sends ``code`` in a private chat; None once it expired.
    Raises :class:`PairingError` when Telegram refuses the token or another poller
    holds it."""
    backoff = backoff or Backoff(1.0, 10.0)
    offset: int | None = None
    try:
        while not code.expired:
            wait = max(0, min(int(poll_timeout), int(code.remaining)))
            try:
                updates = await bot.get_updates(
                    offset=offset,
                    timeout=wait,
                    allowed_updates=["message"],
                    read_timeout=request_timeout,  # PTB adds the poll timeout
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
        if offset is not None:
            with anyio.CancelScope(shield=True):
                await _acknowledge(bot, offset, request_timeout)


async def _after_failure(exc: TelegramError, backoff: Backoff) -> None:
    failure = classify(exc)
    if failure.failure is Failure.UNAUTHORIZED:
        raise PairingError(
            "Telegram rejected the bot token in TELEGRAM_BOT_TOKEN; copy it again from "
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


async def _acknowledge(bot: Bot, offset: int, request_timeout: float) -> None:
    """Confirm every update read, so that none reaches the daemon later."""
    try:
        await bot.get_updates(offset=offset, timeout=0, read_timeout=request_timeout)
    except TelegramError as exc:
        log.warning("telegram_pairing_ack_failed", reason=classify(exc).reason)
