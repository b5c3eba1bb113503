"""A transport's secret from the environment (a token, the bot's own number), never
from the file: registered with the log redaction as it is read, or refused with a
sentence that says where to get it."""

from __future__ import annotations

import os
from collections.abc import Callable

from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot.telemetry.redact import register_secret


def secret_from_env(
    name: str,
    channel: str,
    what: str,
    exit_code: int,
    *,
    valid: Callable[[str], object] = bool,
    shape: str = "",
) -> str:
    """``name``'s value; ChannelFatalError (exiting with ``exit_code``) when it is unset
    or not ``valid`` (``shape`` says what it should look like)."""
    value = os.environ.get(name, "").strip()
    if not valid(value):
        said = f"is not {shape}" if value else "is not set"
        raise ChannelFatalError(
            f"channels.{channel}: {name} {said}; put {what} in the environment "
            "(or the systemd EnvironmentFile=)",
            exit_code,
        )
    register_secret(value)
    return value
