"""Flood control on our side: per-chat pacing, a global cap, and the server's retry-after.

Chat platforms allow a few messages per second in a chat and some tens overall, and
answer a bot that goes faster with a wait (Telegram's 429 ``retry_after``, Matrix's
``M_LIMIT_EXCEEDED`` ``retry_after_ms``). A transport paces below its limits (given as
data: ``min_interval`` per chat, a global ``rate``), and once told to wait sends
nothing at all to that chat until the time has passed (:meth:`ChatGate.block_for`).

Each lane is a token bucket of :data:`BURST` calls that refills one per
``min_interval``, the short burst a chat tolerates. Streamed calls keep one
per ``min_interval``, and streamed edits always leave one call in the bucket; a call
that completes what the user reads (an answer's final text, a notice, a question) may
take that call, so a final goes out right after the last preview rather than a whole
interval later. Over any longer stretch the rate stays one per interval.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from time import monotonic
from typing import Literal

import anyio

Lane = Literal["message", "draft", "action"]
"""Messages and edits share one lane; drafts and chat actions are paced on their own."""


Call = Literal["final", "lead", "preview"]
"""How a call is paced. ``final``: it completes what the user reads (an answer's final
text, a notice, a question), and goes as soon as the bucket holds a call. ``lead``: the
first words of an answer (or a draft, a check), one ``min_interval`` after the last
call. ``preview``: a streamed edit of a message already shown, which also leaves one
call in the bucket for the final that will follow it."""

BURST = 2
"""Calls a lane may make back to back (a chat tolerates a short burst): one live
preview and the final that completes it."""


@dataclass(slots=True)
class ChatGate:
    """When the next call of each lane may go to one chat."""

    min_interval: float
    blocked_until: float = 0.0
    """Nothing goes to the chat before this (retry_after, or a backoff after a failure)."""
    burst: int = BURST
    calling: int = 0
    """Calls made to the chat that Telegram has not answered yet."""
    _last: dict[Lane, float] = field(default_factory=dict)
    _full_at: dict[Lane, float] = field(default_factory=dict)
    """When the lane's bucket is full again (one ``min_interval`` per call taken)."""

    def ready_at(self, lane: Lane, call: Call = "lead") -> float:
        """When the next ``call`` may go to the chat in ``lane`` (see :data:`Call`)."""
        if lane == "action":
            return self.blocked_until
        full_at = self._full_at.get(lane)
        if full_at is None:
            return self.blocked_until
        if call == "final":
            return max(self.blocked_until, full_at - (self.burst - 1) * self.min_interval)
        kept = 1 if call == "preview" and self.burst > 1 else 0
        bucket = full_at - (self.burst - 1 - kept) * self.min_interval
        return max(self.blocked_until, bucket, self._last[lane] + self.min_interval)

    def sent(self, lane: Lane, at: float | None = None) -> None:
        now = monotonic() if at is None else at
        self._last[lane] = now
        self._full_at[lane] = max(self._full_at.get(lane, now), now) + self.min_interval

    def block_for(self, seconds: float, at: float | None = None) -> None:
        now = monotonic() if at is None else at
        self.blocked_until = max(self.blocked_until, now + seconds)


class GlobalPacer:
    """At most ``rate`` calls per second across all chats, handed out in order; ``burst``
    of them may go back to back (where the platform tolerates a short burst); nothing at
    all while a wait that holds every chat runs (:meth:`block_for`)."""

    def __init__(self, rate: float, burst: int = 1) -> None:
        self._interval = 1.0 / rate
        self._burst = burst
        self._next = 0.0
        self.blocked_until = 0.0
        """No call to any chat before this (a flood wait the platform set for the whole
        account or workspace: Matrix's ``M_LIMIT_EXCEEDED``, a Slack tier's 429)."""

    def set_rate(self, rate: float) -> None:
        """Replicas: this process's share of the bot's rate, as the live ones change."""
        self._interval = 1.0 / rate

    def block_for(self, seconds: float, at: float | None = None) -> None:
        """No call across the chats for ``seconds`` (a platform-wide retry-after)."""
        now = monotonic() if at is None else at
        self.blocked_until = max(self.blocked_until, now + seconds)

    async def acquire(self) -> None:
        now = monotonic()
        due = max(now, self._next)
        slot = max(now, due - (self._burst - 1) * self._interval, self.blocked_until)
        self._next = max(due, slot) + self._interval
        if slot > now:
            await anyio.sleep(slot - now)
        held = self.blocked_until - monotonic()
        if held > 0:  # a platform-wide wait told while this call waited its turn
            await anyio.sleep(held)
