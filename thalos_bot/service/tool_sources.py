"""The tool sources a host offers besides its MCP servers, built in one place.

The daemon's catalog and ``thalos-bot tools`` both take them from here, so the report
lists exactly the tools an agent gets. A new built-in source (``agents__``,
``schedule__`` …) is added here once and shows up in both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from thalos_bot.config.memory import MemorySettings
from thalos_bot.config.skills import SkillsSettings
from thalos_bot.domain.agents import AgentCatalog
from thalos_bot.schedules.store import ScheduleStorage
from thalos_bot.schedules.tools import ScheduleToolSource
from thalos_bot.skills.source import SkillsToolSource
from thalos_bot.skills.store import SkillStore
from thalos_bot.subagents.delegate import AgentsToolSource
from thalos_bot.tools.source import ToolSource


class BuiltinSettings(Protocol):
    """The sections the built-in sources read."""

    @property
    def memory(self) -> MemorySettings: ...

    @property
    def skills(self) -> SkillsSettings: ...


def builtin_sources(
    settings: BuiltinSettings,
    *,
    memory: ToolSource,
    skills: SkillStore,
    detached: Sequence[ToolSource] = (),
) -> list[ToolSource]:
    """``memory`` (the source :func:`~thalos_bot.memory.assembly.build_memory` made, so
    it shares the host's store), ``skills`` over ``skills``, then ``detached`` (the
    ``agents`` and ``schedule`` sources of :func:`detached_sources`), in catalog order."""
    return [memory, SkillsToolSource.from_settings(skills, settings.skills), *detached]


def detached_sources(
    catalog: AgentCatalog, schedules: ScheduleStorage
) -> tuple[AgentsToolSource, ScheduleToolSource]:
    """``agents`` (delegation) and ``schedule``; the host binds the runner and the
    scheduler's wake-up once they exist."""
    return AgentsToolSource(catalog), ScheduleToolSource(schedules)
