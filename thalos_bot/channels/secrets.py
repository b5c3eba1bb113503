"""A transport's secret (a token, a password) from the environment only: a clear fatal
error naming the variable when it is not set, and kept out of every log once read."""

from __future__ import annotations

import os

from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot.telemetry.redact import register_secret


def secret_from_env(section: str, name: str, what: str, exit_code: int) -> str:
    """``name``'s value, registered for redaction; unset or blank stops the channel
    (``exit_code``) saying to put ``what`` in the environment."""
    value = os.environ.get(name, "").strip()
    if not value:
        raise ChannelFatalError(
            f"channels.{section}: {name} is not set; put {what} in the environment "
            "(or the systemd EnvironmentFile=)",
            exit_code,
        )
    register_secret(value)
    return value
