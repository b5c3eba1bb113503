"""Pacing to the homeserver's rate limit.

Synapse limits messages per *account* (``rc_message``), not per room, so one
:class:`AccountGate` holds the block a ``429 M_LIMIT_EXCEEDED`` sets (as long as its
``retry_after_ms`` says, else a doubling backoff) for every room; each room keeps its
own least interval between two visible updates on top of it. Failures back off with the
kit's :class:`~thalos_bot.channels.pacing.backoff.Backoff`.
"""

from __future__ import annotations

from dataclasses import dataclass
from time import monotonic


@dataclass(slots=True)
class AccountGate:
    blocked_until: float = 0.0

    def block(self, seconds: float) -> None:
        self.blocked_until = max(self.blocked_until, monotonic() + seconds)


@dataclass(slots=True)
class RoomGate:
    account: AccountGate
    min_interval: float
    last_sent: float = -1e9
    retry_at: float = 0.0
    """After a failure that may not have reached the homeserver: not before then."""

    def ready_at(self) -> float:
        """When the next call may go: after the account's block, this room's retry wait
        and the least interval since its last update."""
        at = max(self.account.blocked_until, self.retry_at)
        return max(at, self.last_sent + self.min_interval)

    def sent(self) -> None:
        self.last_sent = monotonic()
