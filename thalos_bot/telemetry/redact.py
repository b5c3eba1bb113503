"""Scrub secrets from anything that may reach a log line or a span.

Three kinds of secret travel near our code: the Anthropic API key, the Telegram bot
token (which sits inside every Bot API URL as ``/bot<token>/``) and HTTP authorization
headers. :func:`redact` removes all of them from a string; the structlog processor and
the stdlib logging filter below apply it to every log event.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, MutableMapping
from typing import Any

SECRET_ENV_VARS = ("ANTHROPIC_API_KEY", "TELEGRAM_BOT_TOKEN", "DISCORD_BOT_TOKEN")
REDACTED = "[REDACTED]"

_BOT_TOKEN_URL = re.compile(r"/bot\d+:[A-Za-z0-9_-]+")
_BOT_TOKEN_BARE = re.compile(r"\b\d{5,}:[A-Za-z0-9_-]{30,}\b")
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}")
_API_KEY = re.compile(r"\bsk-ant-[A-Za-z0-9_-]{8,}")
_AUTH_HEADER = re.compile(r"(?i)(authorization|x-api-key)(['\"]?\s*[:=]\s*['\"]?)[^'\",\s}]+")

_extra_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember a secret value (e.g. a resolved ``${VAR}``) so it is scrubbed too."""
    if value and len(value) >= 6:
        _extra_secrets.add(value)


def _secrets() -> Iterable[str]:
    for name in SECRET_ENV_VARS:
        value = os.environ.get(name)
        if value and len(value) >= 6:
            yield value
    yield from _extra_secrets


def redact(text: str) -> str:
    for secret in _secrets():
        if secret in text:
            text = text.replace(secret, REDACTED)
    text = _BOT_TOKEN_URL.sub("/bot" + REDACTED, text)
    text = _BOT_TOKEN_BARE.sub(REDACTED, text)
    text = _API_KEY.sub(REDACTED, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return _AUTH_HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


def redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list | tuple):
        return type(value)(redact_value(v) for v in value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    return value


def redact_processor(
    logger: Any, method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: scrub every value of the event."""
    for key, value in list(event_dict.items()):
        event_dict[key] = redact_value(value)
    return event_dict


class RedactingFilter(logging.Filter):
    """stdlib logging filter: render a foreign record's message, scrub it, drop the args.
    (Tracebacks are scrubbed later, by :func:`redact_processor` in the formatter.)"""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, dict):  # from structlog: redacted by the processor
            return True
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken format string must not kill logging
            message = str(record.msg)
        record.msg = redact(message)
        record.args = None
        return True
