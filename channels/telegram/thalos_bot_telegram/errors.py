"""The one place that maps python-telegram-bot's exceptions onto the kit's
:class:`~thalos_bot.channels.delivery.failure.Failure` kinds (what each means for the
next call is said there); a sendMessage in doubt is checked by
:mod:`thalos_bot_telegram.uncertain`."""

from __future__ import annotations

import datetime as dt
import warnings

import httpx
from telegram.error import (
    BadRequest,
    Conflict,
    EndPointNotFound,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
    TimedOut,
)

from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.telemetry.redact import redact


def classify(exc: TelegramError) -> Classified:
    reason = describe(exc)
    if isinstance(exc, RetryAfter):
        return Classified(Failure.RETRY_AFTER, reason, retry_after_seconds(exc))
    if isinstance(exc, BadRequest):
        return Classified(_bad_request(str(exc)), reason)
    if isinstance(exc, TimedOut | NetworkError):
        return Classified(_network(exc), reason)
    if isinstance(exc, Conflict):
        return Classified(Failure.CONFLICT, reason)
    if isinstance(exc, EndPointNotFound):
        return Classified(Failure.UNSUPPORTED, reason)
    if isinstance(exc, InvalidToken):
        # Telegram answers 404 "Not Found" both for a malformed token and for a method
        # the server lacks; 401 means the token itself was refused. getMe at start-up
        # has vouched for the token by the time any other method is called.
        if "not found" in str(exc).lower():
            return Classified(Failure.UNSUPPORTED, reason)
        return Classified(Failure.UNAUTHORIZED, reason)
    return Classified(Failure.REJECTED, reason)  # Forbidden, ChatMigrated, any other


def _bad_request(message: str) -> Failure:
    text = message.lower()
    if "not modified" in text:
        return Failure.NOT_MODIFIED
    if "can't parse entities" in text or "too long" in text:
        return Failure.BAD_ENTITIES
    if "message to edit not found" in text:
        return Failure.GONE
    if "message can't be edited" in text:
        return Failure.NOT_EDITABLE
    if "method not found" in text or "unknown method" in text:
        return Failure.UNSUPPORTED
    return Failure.REJECTED


def _network(exc: NetworkError) -> Failure:
    cause = exc.__cause__
    if isinstance(cause, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout):
        return Failure.NOT_SENT
    if isinstance(exc, TimedOut) and "not* sent" in str(exc):  # PTB's pool-timeout wording
        return Failure.NOT_SENT
    return Failure.MAYBE_SENT


def retry_after_seconds(exc: RetryAfter) -> float:
    """``retry_after`` as seconds, whether PTB hands it out as int or timedelta."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PTB 22 warns when it returns an int
        value = exc.retry_after
    if isinstance(value, dt.timedelta):
        return max(0.0, value.total_seconds())
    return max(0.0, float(value))


def describe(exc: BaseException) -> str:
    """``Type: message`` with every secret scrubbed (PTB's InvalidToken holds the token)."""
    message = str(exc)
    cause = exc.__cause__
    if cause is not None and not message.startswith("httpx."):
        message = f"{message} ({type(cause).__name__})"
    return redact(f"{type(exc).__name__}: {message}")
