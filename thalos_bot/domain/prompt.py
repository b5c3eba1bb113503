"""What a turn sends the model besides the history: the parts of its system prompt, and
the port through which the extras come (recalled memories, the skills catalogue).

:class:`PromptContributor` is implemented by tool sources that know nothing of the
runtime (memory, skills, the guard's wrapper) and called by the runtime, so it sits
here, below both. What of the history is sent is :mod:`thalos_bot.runtime.window`'s
business.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.domain.events import Info
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.security import SecurityContext


@dataclass(frozen=True, slots=True)
class SystemPart:
    """A piece of the system prompt. ``cacheable`` parts are stable across turns and
    marked for prompt caching; per-turn parts (recalled memories) are not."""

    text: str
    cacheable: bool = True


@dataclass(frozen=True, slots=True)
class Contribution:
    parts: Sequence[SystemPart] = ()
    events: Sequence[Info] = field(default_factory=tuple)


class PromptContributor(Protocol):
    async def contribute(
        self,
        agent: AgentDefinition,
        caller: SecurityContext,
        session_id: SessionId,
        user_text: str,
    ) -> Contribution:
        """Parts to add to the system prompt for this turn. Must not raise: a failure
        becomes an ``Info`` event and no parts."""
        ...
