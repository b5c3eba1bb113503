"""``[channels.signal]``: where signal-cli's daemon listens, who may talk to the bot,
and in which groups it answers a mention."""

from __future__ import annotations

import re
import uuid

from pydantic import Field, field_validator

from thalos_bot.channels import settings as kit
from thalos_bot.config.types import Seconds

NUMBER = re.compile(r"^\+[1-9][0-9]{6,14}$")
"""A phone number in E.164 form, as Signal and signal-cli write it."""
GROUP_ID = re.compile(r"^[A-Za-z0-9+/]{43}=$")
"""A group id as signal-cli shows it (``listGroups``): 32 bytes in base64."""


def person_id(value: str) -> str:
    """A number (``+4915112345678``) or a Signal account UUID (ACI), canonical; raises
    ValueError in words for anything else (a name, a number without its ``+``)."""
    text = value.strip()
    if NUMBER.match(text):
        return text
    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise ValueError(
            f"{value!r} is neither a phone number with its country code "
            "(+4915112345678) nor a Signal account UUID"
        ) from None


class SignalConfig(kit.RetryingSettings):
    daemon_url: str = Field(
        "tcp://127.0.0.1:7583", pattern=r"^(tcp://[^/\s]+:[0-9]+|unix:///\S+)/?$"
    )
    """signal-cli's JSON-RPC socket: ``tcp://127.0.0.1:7583`` (``daemon --tcp``) or
    ``unix:///run/signal-cli/socket`` (``daemon --socket``)."""
    allowed_users: list[str] = Field(default_factory=list, validate_default=True)
    """Who may talk to the bot: phone numbers (``+4915112345678``) or Signal account
    UUIDs. Everyone else is ignored silently."""
    groups: list[str] = Field(default_factory=list)
    """Group ids (``signal-cli listGroups``) where the bot answers allowed users who
    mention it. Default: none (one-to-one chats only)."""
    quote_max_chars: int = Field(1500, ge=0, le=20_000)
    """How much of a quoted message is shown to the model (0: none)."""
    request_timeout: Seconds = 60.0
    """How long one call to the daemon may take (a send to a large group is slow)."""
    probe_wait: Seconds = 10.0
    """How long a send in doubt waits for the recipient's delivery receipt before it is
    taken as not arrived and sent again."""
    send_interval: Seconds = 1.0
    """Least time between two messages to one chat (Signal rate-limits bursts)."""

    _listed = kit.listed_when_enabled(
        "allowed_users",
        'list who may talk to the bot, e.g. allowed_users = ["+4915112345678"] '
        "(or run `thalos-bot signal pair`); an empty list never means everyone",
    )
    _group_ids = kit.each_matching(
        "groups",
        GROUP_ID,
        lambda item: (
            f"{item!r} is not a Signal group id; `signal-cli listGroups` shows each "
            "group's id (44 characters of base64 ending in '=')"
        ),
    )
    _trimmed = kit.without_trailing_slash("daemon_url")

    @field_validator("allowed_users")
    @classmethod
    def _people(cls, value: list[str]) -> list[str]:
        return [person_id(item) for item in value]
