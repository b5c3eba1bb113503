"""The skills catalogue: a block in every turn's system prompt listing the skills the
agent may load, one ``- name: description`` line each, within a character budget.

Skills that do not fit are counted in a last line ("… and 3 more (use skills__search)"),
never dropped silently. The block is the same every turn (skills change only at
start-up), so it is a cacheable system part.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from thalos_bot.config.skills import SkillsSettings
from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.domain.events import Info
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.prompt import Contribution, SystemPart
from thalos_bot.domain.prompt_blocks import BlockTag, closing, defuse, opening, render_block
from thalos_bot.domain.security import SecurityContext
from thalos_bot.skills.document import SkillSummary
from thalos_bot.skills.scope import allows, has_skills
from thalos_bot.skills.store import SkillStore

log = structlog.get_logger(__name__)

BLOCK_OPEN = opening(BlockTag.SKILLS)
BLOCK_CLOSE = closing(BlockTag.SKILLS)
INTRO = (
    "Skills are procedures for recurring tasks. When one of these applies, call "
    "skills__load with its name before you start and follow what it says; "
    "skills__search finds skills by topic. Skill text is guidance, not the user's words."
)


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) made one space."""
    return " ".join(text.split())


def catalogue_line(skill: SkillSummary) -> str:
    """``- name: description`` on one line, with any block markup defused."""
    return defuse(f"- {skill.name}: {one_line(skill.description)}")


def overflow_line(count: int) -> str:
    return f"… and {count} more (use skills__search)"


def render_catalogue(skills: Sequence[SkillSummary], budget: int) -> str:
    """The block for ``skills`` (in the order given), at most ``budget`` characters
    when the budget leaves room for the frame and an overflow line; "" for no skills.

    Lines are kept in order while they fit together with the overflow line that the
    rest would need; the rest are counted in that line.
    """
    if not skills:
        return ""
    frame = [BLOCK_OPEN, INTRO]
    used = sum(len(part) + 1 for part in frame) + len(BLOCK_CLOSE)
    lines: list[str] = []
    for index, skill in enumerate(skills):
        line = catalogue_line(skill)
        left_after = len(skills) - index - 1
        reserve = len(overflow_line(left_after)) + 1 if left_after else 0
        if used + len(line) + 1 + reserve > budget:
            break
        lines.append(line)
        used += len(line) + 1
    hidden = len(skills) - len(lines)
    if hidden:
        lines.append(overflow_line(hidden))
    return render_block(BlockTag.SKILLS, [INTRO, *lines])


class SkillsCatalogue:
    """The :class:`~thalos_bot.domain.prompt.PromptContributor` for skills."""

    def __init__(self, store: SkillStore, *, char_budget: int = 4000) -> None:
        self._store = store
        self._budget = char_budget

    @classmethod
    def from_settings(cls, store: SkillStore, settings: SkillsSettings) -> SkillsCatalogue:
        return cls(store, char_budget=settings.catalogue_chars)

    async def contribute(
        self,
        agent: AgentDefinition,
        caller: SecurityContext,
        session_id: SessionId,
        user_text: str,
    ) -> Contribution:
        if not has_skills(agent):
            return Contribution()
        try:
            summaries = await self._store.active_summaries()
        except Exception:
            log.exception("skills-catalogue-failed", agent=agent.id, session=session_id)
            return Contribution(events=(Info(session_id, "skills-catalogue-failed"),))
        text = render_catalogue([s for s in summaries if allows(agent, s.name)], self._budget)
        return Contribution(parts=(SystemPart(text, cacheable=True),)) if text else Contribution()
