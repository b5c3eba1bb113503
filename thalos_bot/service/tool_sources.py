"""The tool sources a host offers besides its MCP servers, built in one place.

The daemon's catalog and ``thalos-bot tools`` both take them from here, so the report
lists exactly the tools an agent gets. A new built-in source (``agents__``,
``schedule__`` …) is added here once and shows up in both.
"""

from __future__ import annotations

from typing import Protocol

from thalos_bot.config.memory import MemorySettings
from thalos_bot.config.skills import SkillsSettings
from thalos_bot.skills.source import SkillsToolSource
from thalos_bot.skills.store import SkillStore
from thalos_bot.tools.source import ToolSource


class BuiltinSettings(Protocol):
    """The sections the built-in sources read."""

    @property
    def memory(self) -> MemorySettings: ...

    @property
    def skills(self) -> SkillsSettings: ...


def builtin_sources(
    settings: BuiltinSettings, *, memory: ToolSource, skills: SkillStore
) -> list[ToolSource]:
    """``memory`` (the source :func:`~thalos_bot.memory.assembly.build_memory` made, so
    it shares the host's store) and ``skills`` over ``skills``, in catalog order."""
    return [memory, SkillsToolSource.from_settings(skills, settings.skills)]
