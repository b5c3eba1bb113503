"""Recalled memories pass the guard too: a wrapper around a prompt contributor.

Memory text was written by people and by the model, possibly from a tool result that
carried an injection, so what the memory contributor recalls is screened before it
enters the system prompt. The block's own markup (``<memories …>``) is ours and is not
held against it; memory text inside was already defused. An annotated block is wrapped
in the untrusted-data note; a withheld one is replaced by the withheld line. Either way a
``memory-quarantined`` event goes on the stream, is logged and counted.
"""

from __future__ import annotations

import structlog

from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.domain.events import Info
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.prompt import Contribution, PromptContributor, SystemPart
from thalos_bot.domain.security import SecurityContext
from thalos_bot.guard.guard import ResultGuard

log = structlog.get_logger(__name__)

MEMORY_QUARANTINED = "memory-quarantined"
OWN_MARKUP = ("forged-block-tag",)


class GuardedContributor:
    """A :class:`PromptContributor` whose parts pass ``guard`` first."""

    def __init__(self, inner: PromptContributor, guard: ResultGuard) -> None:
        self.inner = inner
        self.guard = guard

    async def contribute(
        self,
        agent: AgentDefinition,
        caller: SecurityContext,
        session_id: SessionId,
        user_text: str,
    ) -> Contribution:
        contribution = await self.inner.contribute(agent, caller, session_id, user_text)
        if not self.guard.enabled or not contribution.parts:
            return contribution
        parts: list[SystemPart] = []
        events = list(contribution.events)
        for part in contribution.parts:
            screening = self.guard.screen(part.text, source="recalled memory", skip=OWN_MARKUP)
            if screening.verdict == "allow":
                parts.append(part)
                continue
            parts.append(SystemPart(screening.text, cacheable=False))
            log.warning(
                MEMORY_QUARANTINED,
                verdict=screening.verdict,
                rules=list(screening.rules),
                session_id=session_id,
            )
            # OpenTelemetry loads with the first quarantined memory, not with the console.
            from thalos_bot.telemetry.otel import instruments

            for rule in screening.rules:
                instruments().guarded("memory", screening.verdict, rule)
            events.append(
                Info(
                    session_id,
                    MEMORY_QUARANTINED,
                    {"verdict": screening.verdict, "rules": list(screening.rules)},
                )
            )
        return Contribution(tuple(parts), tuple(events))
