"""``[channels.slack]``: who may talk to the bot, where, and how it answers."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from thalos_bot.channels.settings import ChannelSettings, each_matching, listed_when_enabled
from thalos_bot.config.types import Seconds

_USER = re.compile(r"^[UW][A-Z0-9]{2,}$")
_CHANNEL = re.compile(r"^[CG][A-Z0-9]{2,}$")


class SlackConfig(ChannelSettings):
    allowed_users: list[str] = Field(default_factory=list, validate_default=True)
    """Slack member ids (``U…`` or ``W…``) allowed to talk to the bot. Everyone else
    gets nothing."""
    channels: list[str] = Field(default_factory=list)
    """Channel ids (``C…``, ``G…``) the bot serves: there a mention starts a thread that
    is one conversation. Every other channel is ignored."""
    assistant_threads: bool = False
    """Slack's AI-assistant view: each thread of the bot's DM is its own conversation
    (rather than the whole DM being one)."""
    base_url: str | None = Field(None, pattern=r"^https?://\S+$")
    """Root of the Web API (a test fake); default Slack's ``https://slack.com/api/``."""
    streaming: Literal["auto", "edit", "off"] = "auto"
    """``auto``: Slack's chat streaming (chat.startStream) where the workspace has it,
    else one message edited in place; ``edit``: always edit; ``off``: final only."""
    slash_command: str = Field("/thalos", pattern=r"^/[a-z0-9_-]{1,31}$")
    """The slash command whose text is one of the six commands (``/thalos new``)."""
    request_timeout: Seconds = 15.0
    ping_interval: Seconds = 10.0
    """Socket Mode ping cadence; a silent connection is replaced after four of them."""
    min_edit_interval: Seconds = 1.0
    """Least time between two visible updates of one answer."""
    drain_timeout: Seconds = 10.0

    _user_ids = each_matching(
        "allowed_users",
        _USER,
        lambda item: (
            f"{item!r} is not a Slack member id: allowed_users takes ids like "
            "U0123ABCD (a profile's ⋮ menu → Copy member ID), not names"
        ),
    )
    _listed = listed_when_enabled(
        "allowed_users",
        "list the Slack member ids allowed to talk to the bot, e.g. "
        'allowed_users = ["U0123ABCD"]; an empty list never means everyone',
    )
    _channel_ids = each_matching(
        "channels",
        _CHANNEL,
        lambda item: (
            f"{item!r} is not a channel id: channels takes ids like C0123ABCD "
            "(the channel's details → About, at the bottom), not #names"
        ),
    )

    @field_validator("base_url")
    @classmethod
    def _slash(cls, value: str | None) -> str | None:
        return value.rstrip("/") + "/" if value is not None else None
