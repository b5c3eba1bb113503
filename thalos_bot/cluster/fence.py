"""What a replica still says in a chat, and the rate limits it shares with the others.

:class:`LaneFence` is shown each delivery before the adapter takes it: a lane (a chat)
whose lease this replica lost, or whose lease may have run out by this process's own
clock, hears nothing more from here (a process stopped past its lease and continued
must not finish its answer on screen); a turn's end clears its mark in the lease row.
:func:`sharing` stores each 429's wait for every replica (:mod:`.holds`).
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import anyio.abc
import psycopg
import structlog

from thalos_bot.cluster.holds import ChatHolds
from thalos_bot.cluster.leases import LeaseBook
from thalos_bot.domain.events import TurnCompleted, TurnFailed

log = structlog.get_logger(__name__)


class LaneFence:
    def __init__(
        self,
        leases: LeaseBook,
        lost: set[str],
        unanswered: dict[str, int],
        lane_of: Callable[[str], str],
        *,
        group: anyio.abc.TaskGroup,
        name: str = "telegram",
    ) -> None:
        """``lost`` and ``unanswered`` are the drain's (:class:`.drain.InboxDrain`);
        ``lane_of`` names a conversation's lane; ``name`` prefixes the log events."""
        self._leases = leases
        self._lost = lost
        self._unanswered = unanswered
        self._lane_of = lane_of
        self._group = group
        self._fenced = f"{name}_delivery_fenced"
        self._settle_failed = f"{name}_settle_failed"

    def __call__(self, conversation: str, event: object) -> bool:
        lane = self._lane_of(conversation)
        leases = self._leases
        if lane in self._lost or (lane in leases.held and not leases.fresh(lane)):
            log.info(self._fenced, lane=lane, delivery=type(event).__name__)
            return False
        self._unanswered.pop(lane, None)  # the pump read it: it is answered here
        if isinstance(event, TurnCompleted | TurnFailed):
            self._group.start_soon(self._settle, lane)
        return True

    async def _settle(self, lane: str) -> None:
        try:
            await self._leases.settle(lane)
        except psycopg.Error as exc:
            log.warning(self._settle_failed, lane=lane, error=type(exc).__name__)


def sharing(
    holds: ChatHolds, group: anyio.abc.TaskGroup, name: str = "telegram"
) -> Callable[[int | None, float], None]:
    """What the adapter calls with each 429's (chat, retry_after): stored for every
    replica (in ``group``: the sender that was told never waits for the database).
    Telegram's 429s each hold one chat (its overall rate is divided among the replicas
    instead), so a wait for every chat (``None``) is never told here."""
    not_shared, shared = f"{name}_hold_not_shared", f"{name}_hold_shared"

    async def store(chat: int, seconds: float) -> None:
        try:
            left = await holds.hold(chat, seconds)
        except (psycopg.Error, OSError) as exc:
            log.warning(not_shared, chat=chat, error=type(exc).__name__)
            return
        log.info(shared, chat=chat, retry_after=round(left, 2))

    def told(chat: int | None, seconds: float) -> None:
        if chat is not None:
            group.start_soon(store, chat, seconds)

    return told
