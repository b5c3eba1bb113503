"""A transport's secret from the environment (a token, the bot's own number), never
from the file: registered with the log redaction as it is read, or refused with a
sentence that says where to get it; and its libraries kept from logging one."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable

from thalos_bot.channels.ports import EXIT_CONFIG, ChannelFatalError
from thalos_bot.telemetry.redact import RedactingFilter, register_secret


def secret_from_env(
    name: str,
    channel: str,
    what: str,
    *,
    valid: Callable[[str], object] = bool,
    shape: str = "",
) -> str:
    """``name``'s value; ChannelFatalError (exiting with :data:`EXIT_CONFIG`, as any
    configuration error) when it is unset or not ``valid`` (``shape`` says what it
    should look like)."""
    value = os.environ.get(name, "").strip()
    if not valid(value):
        said = f"is not {shape}" if value else "is not set"
        raise ChannelFatalError(
            f"channels.{channel}: {name} {said}; put {what} in the environment "
            "(or the systemd EnvironmentFile=)",
            EXIT_CONFIG,
        )
    register_secret(value)
    return value


def quiet_loggers(names: Iterable[str], level: int = logging.WARNING) -> None:
    """Hold the loggers ``names`` at ``level`` at least, each behind the redactor (a
    platform library whose loggers write request URLs, which may hold a token)."""
    for name in names:
        logger = logging.getLogger(name)
        if logger.level < level:
            logger.setLevel(level)
        if not any(isinstance(f, RedactingFilter) for f in logger.filters):
            logger.addFilter(RedactingFilter())
