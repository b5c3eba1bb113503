"""The optional port for channels that need to remember, across restarts, the highest
message id they know in each chat.

Telegram numbers a private chat's messages with one counter for both sides, so the
highest id known there is where the check of a send in doubt starts (the message, if it
arrived, has an id above it). A daemon that just started knows no id in a chat until
someone writes there; with this port it reads back what the previous process knew.
A mark only ever grows: :meth:`ChatMarks.raise_marks` leaves a higher stored mark alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from thalos_bot.domain.ids import ChannelId


class ChatMarks(Protocol):
    async def load(self, channel_id: ChannelId) -> dict[str, int]:
        """Every chat's mark for the channel, by the channel's own chat key."""
        ...

    async def raise_marks(self, channel_id: ChannelId, marks: Mapping[str, int]) -> None:
        """Store each mark that is higher than the one stored (all in one write)."""
        ...
