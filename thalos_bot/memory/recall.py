"""Auto-recall: a :class:`~thalos_bot.domain.prompt.PromptContributor` that recalls the
user's message once per turn and adds the matches to the system prompt as a block.

It never fails a turn: any error is logged (its type, never memory text) and becomes a
``memory-recall-failed`` event, and the turn goes on without the block.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import structlog

from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.domain.clock import utc_now
from thalos_bot.domain.events import Info
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.prompt import Contribution, SystemPart
from thalos_bot.domain.security import SecurityContext
from thalos_bot.memory.port import MemoryPort
from thalos_bot.memory.render import render_block

log = structlog.get_logger(__name__)

SPARE_CANDIDATES = 8
"""Extra matches fetched beyond ``top_k``, for lines the character budget skips."""


def recall_owners(caller: SecurityContext, shared_owner: str | None) -> tuple[str, ...]:
    """Whose memories ``caller`` may recall: their own, and the shared owner's."""
    owners = [caller.id]
    if shared_owner and shared_owner != caller.id:
        owners.append(shared_owner)
    return tuple(owners)


class MemoryRecall:
    """Recalls memories for agents whose ``memory.enabled`` is set."""

    def __init__(
        self,
        store: MemoryPort,
        *,
        shared_owner: str | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._store = store
        self._shared_owner = shared_owner
        self._clock = clock

    async def contribute(
        self,
        agent: AgentDefinition,
        caller: SecurityContext,
        session_id: SessionId,
        user_text: str,
    ) -> Contribution:
        policy = agent.memory
        if not policy.enabled or caller.anonymous:
            return Contribution()
        try:
            recalled = await self._store.recall(
                recall_owners(caller, self._shared_owner),
                user_text,
                agent=agent.id,
                top_k=policy.top_k + SPARE_CANDIDATES,
                min_score=policy.min_score,
                touch=False,
            )
            block, shown, characters = render_block(
                [r.record for r in recalled],
                now=self._clock(),
                top_k=policy.top_k,
                char_budget=policy.char_budget,
                shared_owner=self._shared_owner,
            )
            if shown:
                await self._store.touch([r.id for r in shown])
        except Exception as exc:
            log.warning(
                "memory-recall-failed",
                session=session_id,
                agent=agent.id,
                error=type(exc).__name__,
            )
            log.debug("memory-recall-failed-detail", session=session_id, exc_info=True)
            failed = Info(session_id, "memory-recall-failed", {"error": type(exc).__name__})
            return Contribution(events=(failed,))
        if not shown:
            return Contribution()
        ids = [r.id for r in shown]
        log.info("memory-recalled", session=session_id, ids=ids, characters=characters)
        return Contribution(
            parts=(SystemPart(block, cacheable=False),),
            events=(Info(session_id, "memory-recalled", {"ids": ids, "characters": characters}),),
        )
