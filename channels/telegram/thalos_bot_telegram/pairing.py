"""Pairing: find the Telegram account of the person setting the bot up.

A temporary long poll with the bot's token waits for a private message holding the
kit's one-time code (:mod:`thalos_bot.channels.admission.pairing`). Nobody is ever
answered: a wrong code, a stranger, a group message are all ignored without a word,
exactly as the running bot ignores strangers. Every update read is acknowledged before
pairing ends, so the daemon never sees (and answers) them.
"""

from __future__ import annotations

from dataclasses import dataclass

import anyio
import structlog
from telegram import Bot, Update
from telegram.constants import ChatType
from telegram.error import TelegramError

from thalos_bot.channels.admission.pairing import PairingCode, PairingError
from thalos_bot.channels.admission.pairing import PairingExpiredError as _Expired
from thalos_bot.channels.delivery.failure import Failure
from thalos_bot.channels.pacing.backoff import Backoff
from thalos_bot_telegram.errors import classify

log = structlog.get_logger(__name__)


class PairingExpiredError(_Expired):
    def __init__(self) -> None:
        super().__init__("thalos-bot telegram pair")


@dataclass(frozen=True, slots=True)
class Person:
    """Who sent the code."""

    user_id: int
    first_name: str
    last_name: str | None
    username: str | None

    def describe(self) -> str:
        name = " ".join(part for part in (self.first_name, self.last_name) if part)
        handle = f" (@{self.username})" if self.username else ""
        return f"{name}{handle}, user id {self.user_id}"


def _sender(update: Update, code: PairingCode) -> Person | None:
    message = update.message
    if message is None or message.chat.type != ChatType.PRIVATE or message.text is None:
        return None
    user = message.from_user
    if user is None or user.is_bot:
        return None
    if not code.redeem(message.text):
        log.debug("telegram_pairing_ignored", update_id=update.update_id)
        return None
    return Person(user.id, user.first_name, user.last_name, user.username)


async def wait_for_code(
    bot: Bot,
    code: PairingCode,
    *,
    poll_timeout: float,
    request_timeout: float,
    backoff: Backoff | None = None,
) -> Person:
    """Long-poll until someone sends ``code`` in a private chat. Raises
    :class:`PairingExpiredError` once it expires, :class:`PairingError` when Telegram
    refuses the token or another poller holds it."""
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
                person = _sender(update, code)
                if person is not None:
                    return person
        raise PairingExpiredError
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
