"""``[channels.matrix]``: which account the bot is, who may talk to it, where."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from thalos_bot.channels import settings as kit
from thalos_bot.config.types import Seconds

MXID = re.compile(r"^@[a-z0-9._=/+\-]+:[A-Za-z0-9.\-]+(:\d+)?$")
"""A full user id (``@alice:example.org``): the localpart as the spec allows it."""
ROOM_ID = re.compile(r"^![A-Za-z0-9._~+/=\-]+(:[A-Za-z0-9.\-]+(:\d+)?)?$")
"""A room id: ``!abc:example.org``, or from room version 12 on ``!abc`` alone (its
hash, no server part). An alias (``#room:...``) is not an id."""


class MatrixConfig(kit.RetryingSettings):
    homeserver: str = Field("", pattern=r"^(https?://\S+)?$", validate_default=True)
    """The client-server API's base URL, e.g. ``https://matrix.example.org``."""
    user_id: str = Field("", validate_default=True)
    """The bot account's full id, e.g. ``@thalos:example.org``."""
    allowed_users: list[str] = Field(default_factory=list, validate_default=True)
    """Full user ids allowed to talk to the bot. Everyone else is ignored silently."""
    rooms: list[str] = Field(default_factory=list)
    """Group rooms served (room ids, ``!…:server``). In a listed room the bot answers
    allowed users who mention it or reply to it; every other group room is ignored."""
    device_name: str = Field("thalos-bot", min_length=1, max_length=100)
    """The device name shown in the account's session list (on a password login)."""
    encryption: bool = False
    """End-to-end encryption (Olm/Megolm, keys in the state folder; on replicas in the
    shared store, sealed with ``THALOS_MATRIX_PICKLE_KEY``). Off, or when it
    cannot be set up, an encrypted room is told so once and never answered in plaintext
    (see docs/matrix.md, Encryption)."""
    trust: Literal["tofu", "cross-signed"] = "tofu"
    """Which devices of a room's members get the bot's room keys: ``tofu`` (every device
    whose keys are validly self-signed, verified or not, as Element does today) or
    ``cross-signed`` (only devices their owner cross-signed, under a master key trusted
    on first use). See docs/matrix.md, Encryption."""
    auto_confirm_sas: bool = False
    """Emoji verification: confirm the emoji without the operator. Off (the default),
    the bot logs the emoji and waits for ``thalos-bot matrix verify``."""
    streaming: Literal["edit", "off"] = "edit"
    """How an answer shows while it is written: ``edit`` (one message, then ``m.replace``
    edits as it grows) or ``off`` (the final text only: fewer events, for a busy
    homeserver)."""
    room_min_interval: Seconds = 1.0
    """Least time between two visible updates (message, edit) in one room. A 429 from
    the homeserver is obeyed on top of it, as long as its ``retry_after_ms`` says."""
    sync_timeout: Seconds = 30.0
    """Long-poll timeout of ``/sync``."""
    request_timeout: Seconds = 10.0
    """Network timeout of one call (added to sync_timeout for ``/sync``)."""

    _trimmed = kit.without_trailing_slash("homeserver")
    _homeserver = kit.listed_when_enabled(
        "homeserver", "set the homeserver's URL, e.g. https://matrix.example.org"
    )
    _bot_id = kit.listed_when_enabled("user_id", "set the bot's id, e.g. @thalos:example.org")
    _user_id = kit.each_matching(
        "user_id",
        MXID,
        lambda item: (
            f"{item!r} is not a full Matrix user id: write it as @name:server "
            "(e.g. @thalos:example.org)"
        ),
    )
    _user_ids = kit.each_matching(
        "allowed_users",
        MXID,
        lambda item: (
            f"{item!r} is not a full Matrix user id: allowed_users takes ids "
            "like @alice:example.org (not display names); `thalos-bot matrix pair` finds yours "
            "and adds it"
        ),
    )
    _listed = kit.listed_when_enabled(
        "allowed_users",
        "list the Matrix user ids allowed to talk to the bot, e.g. "
        'allowed_users = ["@alice:example.org"]; an empty list never means '
        "everyone (`thalos-bot matrix pair` finds your id and adds it)",
    )
    _rooms = kit.each_matching(
        "rooms",
        ROOM_ID,
        lambda item: (
            f"{item!r} is not a room id like !abc123:example.org"
            + (" (that is an alias: use the room id from its settings)" * item.startswith("#"))
        ),
    )
