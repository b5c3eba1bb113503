"""A transport's secrets from the environment, and its libraries kept from logging them.

Secrets come only from the environment. Each one read is registered with the redactor
(:mod:`thalos_bot.telemetry.redact`), so no log line, exception text or notice carries
it; a platform library whose loggers write request URLs (which may hold a token) is held
below INFO, behind the same redactor.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable

from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot.telemetry.redact import RedactingFilter, register_secret


def secret_from_env(env: str, section: str, what: str, exit_code: int) -> str:
    """``env``'s value, registered with the redactor. Unset: a :class:`ChannelFatalError`
    saying ``section`` needs ``what`` there (the daemon stops with ``exit_code``)."""
    value = os.environ.get(env, "").strip()
    if not value:
        raise ChannelFatalError(
            f"{section}: {env} is not set; put {what} in the environment (or the systemd "
            "EnvironmentFile=)",
            exit_code,
        )
    register_secret(value)
    return value


def quiet_loggers(names: Iterable[str], level: int = logging.WARNING) -> None:
    """Hold the loggers ``names`` at ``level`` at least, each behind the redactor."""
    for name in names:
        logger = logging.getLogger(name)
        if logger.level < level:
            logger.setLevel(level)
        if not any(isinstance(f, RedactingFilter) for f in logger.filters):
            logger.addFilter(RedactingFilter())
