"""The tools-and-skills section's read model: each tool source (MCP servers and the
built-in sources) with its state, as ``thalos-bot tools`` reports it, and the skills
the last sync stored."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from thalos_bot.dashboard.deps import SkillListing
from thalos_bot.tools.mcp.supervisor import McpServerSource
from thalos_bot.tools.source import SourceState, ToolSource


@dataclass(frozen=True, slots=True)
class SourceRow:
    name: str
    kind: str
    """``MCP server`` or ``built in``."""
    state: SourceState
    tool_count: int
    reason: str
    tools: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SkillRow:
    name: str
    description: str
    active: bool
    source: str
    tags: tuple[str, ...]
    updated_at: datetime


def source_rows(sources: Sequence[ToolSource]) -> list[SourceRow]:
    """The sources in the catalog's order."""
    rows: list[SourceRow] = []
    for source in sources:
        status = source.status()
        rows.append(
            SourceRow(
                name=source.name,
                kind="MCP server" if isinstance(source, McpServerSource) else "built in",
                state=status.state,
                tool_count=status.tool_count,
                reason=status.reason,
                tools=tuple(tool.name for tool in source.tools()),
            )
        )
    return rows


async def skill_rows(skills: SkillListing) -> list[SkillRow]:
    """Every stored skill by name, the active and the deactivated."""
    return [
        SkillRow(
            name=skill.name,
            description=skill.description,
            active=skill.active,
            source=str(skill.source),
            tags=skill.tags,
            updated_at=skill.updated_at,
        )
        for skill in await skills.stored()
    ]
