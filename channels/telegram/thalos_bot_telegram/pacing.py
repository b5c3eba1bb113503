"""Flood control on our side: per-chat pacing, a global cap, and Telegram's retry_after.

Telegram allows about one message per second in a chat and about thirty per second
overall, and answers 429 with ``retry_after`` when a bot goes faster. We pace below
those limits, and once told to wait we send nothing at all to that chat until the time
has passed (the Bot API closes the whole chat, not one method).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from time import monotonic
from typing import Literal

import anyio

Lane = Literal["message", "draft", "action"]
"""Messages and edits share one lane; drafts and chat actions are paced on their own."""


@dataclass(slots=True)
class ChatGate:
    """When the next call of each lane may go to one chat."""

    min_interval: float
    blocked_until: float = 0.0
    """Nothing goes to the chat before this (retry_after, or a backoff after a failure)."""
    _last: dict[Lane, float] = field(default_factory=dict)

    def ready_at(self, lane: Lane) -> float:
        last = self._last.get(lane)
        paced = 0.0 if last is None or lane == "action" else last + self.min_interval
        return max(self.blocked_until, paced)

    def sent(self, lane: Lane, at: float | None = None) -> None:
        self._last[lane] = monotonic() if at is None else at

    def block_for(self, seconds: float, at: float | None = None) -> None:
        now = monotonic() if at is None else at
        self.blocked_until = max(self.blocked_until, now + seconds)


class GlobalPacer:
    """At most ``rate`` calls per second across all chats, handed out in order."""

    def __init__(self, rate: float) -> None:
        self._interval = 1.0 / rate
        self._next = 0.0

    async def acquire(self) -> None:
        now = monotonic()
        slot = max(now, self._next)
        self._next = slot + self._interval
        if slot > now:
            await anyio.sleep(slot - now)
