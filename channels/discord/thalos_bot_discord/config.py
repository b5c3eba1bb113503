"""``[channels.discord]``: who may talk to the bot, where, and how it talks back."""

from __future__ import annotations

from pydantic import Field, ValidationInfo, field_validator

from thalos_bot.channels import settings as kit
from thalos_bot.config.types import Seconds

SNOWFLAKE_MIN = 1 << 22
"""The smallest id Discord hands out (any snowflake has a timestamp above 0)."""


class DiscordConfig(kit.ChannelSettings):
    allowed_users: list[int] = Field(default_factory=list, validate_default=True)
    """Discord user ids allowed to talk to the bot. Everyone else is ignored silently."""
    guild_channels: list[int] = Field(default_factory=list)
    """Server channel ids the bot serves: there it answers allowed users who mention it
    or reply to it. Default: none (direct messages only)."""
    threads: bool = False
    """In a server channel, answer each mention in a thread of its own (the thread is then
    the conversation, and needs no further mentions)."""
    base_url: str | None = Field(None, pattern=r"^https?://\S+$")
    """The REST API root, e.g. ``https://discord.com/api/v10`` (a proxy, or a test fake).
    Default: Discord's own."""
    gateway_url: str | None = Field(None, pattern=r"^wss?://\S+$")
    """The gateway WebSocket URL. Default: Discord's own (``wss://gateway.discord.gg/``)."""
    edits_per_window: int = Field(5, ge=1, le=50)
    """Most message writes (posts and edits) in one channel per ``edit_window``: Discord's
    per-channel bucket allows about 5 per 5 s."""
    edit_window: Seconds = 5.0
    register_commands: bool = True
    """Register the commands as application (slash) commands at start."""
    quote_max_chars: int = Field(1500, ge=0, le=20_000)
    """How much of a replied-to message is quoted to the model (0: none)."""
    send_attempts: int = Field(5, ge=1, le=20)
    """Read by nothing since the kit's delivery engine retries (a write in doubt is made
    again with its nonce); still accepted, so older files load."""
    backoff_initial: Seconds = 1.0
    backoff_max: Seconds = 30.0
    guild_ready_timeout: Seconds = 2.0
    """How long discord.py waits for the servers' GUILD_CREATE before it is ready."""

    _no_names = kit.numbers_only(
        "allowed_users",
        lambda item: (
            f"{item!r} is not a user id: allowed_users takes numeric Discord ids "
            "(Developer Mode, then Copy User ID), not names"
        ),
    )
    _listed = kit.listed_when_enabled(
        "allowed_users",
        "list the Discord user ids allowed to talk to the bot, e.g. "
        "allowed_users = [123456789012345678]; an empty list never means everyone",
    )
    _trimmed = kit.without_trailing_slash("base_url", "gateway_url")

    @field_validator("allowed_users", "guild_channels")
    @classmethod
    def _snowflakes(cls, value: list[int], info: ValidationInfo) -> list[int]:
        what = "user ids" if info.field_name == "allowed_users" else "channel ids"
        bad = [item for item in value if isinstance(item, bool) or item < SNOWFLAKE_MIN]
        if bad:
            raise ValueError(
                f"{what} are Discord ids (snowflakes such as 123456789012345678; turn on "
                f"Developer Mode and use Copy ID), not {bad[0]!r}"
            )
        return value
