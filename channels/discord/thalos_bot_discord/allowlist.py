"""Whom the bot may still write to unasked, by ``[channels.discord]`` as it stands now."""

from __future__ import annotations

from dataclasses import dataclass

from thalos_bot.domain.address import Address
from thalos_bot_discord.addressing import Place
from thalos_bot_discord.config import DiscordConfig


@dataclass(frozen=True, slots=True)
class DiscordAllowlist:
    allowed_users: frozenset[int]
    guild_channels: frozenset[int]

    @classmethod
    def of(cls, config: DiscordConfig) -> DiscordAllowlist:
        return cls(frozenset(config.allowed_users), frozenset(config.guild_channels))

    def refusal(self, address: Address) -> str | None:
        try:
            place = Place.parse(address.conversation_id)
        except ValueError as exc:
            return str(exc)
        listed = place.listed_channel
        if listed is None:
            if place.id in self.allowed_users:
                return None
            return f"user {place.id} is not in allowed_users"
        if listed in self.guild_channels:
            return None
        return f"channel {listed} is not in guild_channels"
