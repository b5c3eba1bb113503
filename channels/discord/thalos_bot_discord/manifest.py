"""The Discord channel as the core sees it before it runs (no discord.py import here):
see :mod:`thalos_bot.channels.manifest`."""

from __future__ import annotations

from thalos_bot.channels.admission.allowlist import Seat
from thalos_bot.channels.manifest import Admission, Secret, plug_in
from thalos_bot_discord import TOKEN_ENV
from thalos_bot_discord.addressing import Place
from thalos_bot_discord.config import DiscordConfig


def _seat(conversation_id: str) -> Seat[int]:
    place = Place.parse(conversation_id)  # a thread sits in its listed channel
    return Seat(user=place.id) if place.kind == "dm" else Seat(group=place.parent or place.id)


def _summary(config: DiscordConfig) -> str:
    where = config.base_url or "discord.com"
    listed = config.guild_channels
    channels = f" and {len(listed)} server channel(s)" if listed else ""
    threads = " (a thread per mention)" if config.threads and listed else ""
    return (
        f"direct messages{channels}{threads} with {len(config.allowed_users)} allowed user(s) "
        f"via {where}, {config.principal_note()}"
    )


manifest = plug_in(
    "discord",
    DiscordConfig,
    _summary,
    admission=Admission(_seat, "Discord", groups_key="guild_channels", group_word="channel"),
    finds="your Discord id",
    order=40,
    send_side=True,
    keys=(
        ("guild_channels", [], "server channel ids it serves"),
        ("threads", False, "a thread per mention"),
    ),
    secrets=(Secret(TOKEN_ENV, "Developer Portal, Bot, Reset Token"),),
    install_note=" (docs/discord.md)",
)
