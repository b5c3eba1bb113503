"""The optional port for channels that need to remember, across restarts, the highest
message id they know, by a key of their own (a chat, or a counter several chats share).

Telegram numbers the messages of all of a bot's private chats and basic groups with the
bot account's one counter (a supergroup has its own), so the highest id known there is
where the check of a send in doubt starts (the message, if it arrived, has an id above
it). A daemon that just started knows no id until someone writes; with this port it
reads back what the previous process knew. A mark only ever grows:
:meth:`ChatMarks.raise_marks` leaves a higher stored mark alone; :meth:`ChatMarks.prune`
forgets the marks not raised for a while.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Protocol

from thalos_bot.domain.ids import ChannelId


class ChatMarks(Protocol):
    async def load(self, channel_id: ChannelId) -> dict[str, int]:
        """Every chat's mark for the channel, by the channel's own chat key."""
        ...

    async def raise_marks(self, channel_id: ChannelId, marks: Mapping[str, int]) -> None:
        """Store each mark that is higher than the one stored (all in one write)."""
        ...

    async def prune(
        self, channel_id: ChannelId, older_than: timedelta, *, keep: Sequence[str] = ()
    ) -> int:
        """Delete the channel's marks not raised for ``older_than`` (but those keyed
        ``keep``); return how many were deleted."""
        ...
