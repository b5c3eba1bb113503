"""Where the bot may still write unasked (a scheduled answer), by ``[channels.slack]``.

A thread in a channel is allowed while its channel is in ``channels``. A direct message
is allowed while ``allowed_users`` names anyone: a DM's id does not say whose it is, and
the bot only ever answered DMs of allowed users.
"""

from __future__ import annotations

from dataclasses import dataclass

from thalos_bot.domain.address import Address
from thalos_bot_slack.addressing import Place
from thalos_bot_slack.config import SlackConfig


@dataclass(frozen=True, slots=True)
class SlackAllowlist:
    allowed_users: frozenset[str]
    channels: frozenset[str]

    @classmethod
    def of(cls, config: SlackConfig) -> SlackAllowlist:
        return cls(frozenset(config.allowed_users), frozenset(config.channels))

    def refusal(self, address: Address) -> str | None:
        try:
            place = Place.parse(address.conversation_id)
        except ValueError:
            return f"{address.conversation_id!r} is not a Slack conversation id"
        if place.is_dm:
            return None if self.allowed_users else "allowed_users is empty"
        if place.channel in self.channels:
            return None
        return f"channel {place.channel} is not in channels"
