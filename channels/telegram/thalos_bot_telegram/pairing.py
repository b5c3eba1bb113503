"""Pairing: find the Telegram account of the person setting the bot up.

A temporary long poll with the bot's token waits for a private message holding a
one-time code. The code is single-use, expires after ten minutes and is compared in
constant time. Nobody is ever answered: a wrong code, a stranger, a group message are
all ignored without a word, exactly as the running bot ignores strangers. Every update
read is acknowledged before pairing ends, so the daemon never sees (and answers) them.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import structlog
from telegram import Bot, Update
from telegram.constants import ChatType
from telegram.error import TelegramError

from thalos_bot_telegram.backoff import Backoff
from thalos_bot_telegram.errors import Failure, classify

log = structlog.get_logger(__name__)

CODE_TTL = 600.0
"""Seconds a pairing code stays valid."""
ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
"""No 0/O or 1/I: the code is read off one screen and typed on another."""
CODE_LENGTH = 8

Clock = Callable[[], float]


class PairingError(Exception):
    """Pairing could not finish; ``message`` is fit to show the person."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class PairingExpiredError(PairingError):
    def __init__(self) -> None:
        super().__init__(
            "the pairing code expired before anyone sent it; run `thalos-bot telegram pair` "
            "again for a new one"
        )


class PairingCode:
    """A one-time code: :meth:`redeem` accepts it once, before it expires."""

    def __init__(self, *, clock: Clock = time.monotonic, ttl: float = CODE_TTL) -> None:
        self._value = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
        self._clock = clock
        self.expires_at = clock() + ttl
        self._used = False

    @property
    def shown(self) -> str:
        """The code as printed: two groups of four."""
        half = CODE_LENGTH // 2
        return f"{self._value[:half]}-{self._value[half:]}"

    @property
    def remaining(self) -> float:
        return self.expires_at - self._clock()

    @property
    def expired(self) -> bool:
        return self.remaining <= 0

    def redeem(self, text: str) -> bool:
        """True once, for the right code sent in time; spaces, a dash and case do not
        matter. The comparison takes the same time wherever a wrong code differs."""
        typed = "".join(text.split()).replace("-", "").upper()
        matches = hmac.compare_digest(typed.encode(), self._value.encode())
        if not matches or self._used or self.expired:
            return False
        self._used = True
        return True


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
