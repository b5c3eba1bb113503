"""Which skills an agent may see: its ``skills`` globs over skill names.

No globs (the default) means no skills at all: no catalogue block, no skill tools.
"""

from __future__ import annotations

from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.tools.policy import matches_any


def has_skills(agent: AgentDefinition) -> bool:
    """True when the agent has any skill globs at all."""
    return bool(agent.skills)


def allows(agent: AgentDefinition, name: str) -> bool:
    """True when one of the agent's ``skills`` globs matches ``name``."""
    return matches_any(agent.skills, name)
