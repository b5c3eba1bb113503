"""``thalos-bot tools [--agent ID]``: start the tool servers, report what each agent can
use and under which policies, then stop them.

Every tool source of the daemon's catalog is listed: the MCP servers and the built-in
sources (:mod:`thalos_bot.service.tool_sources`). The built-in ones are built over a
throw-away in-memory database: listing tools never reads or changes the bot's data."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from typing import Protocol

import anyio

from thalos_bot.config.loader import load_settings
from thalos_bot.config.models import build_catalog
from thalos_bot.config.tools import McpServerSettings, ToolPolicySettings, ToolsSettings
from thalos_bot.domain.agents import AgentCatalog, AgentDefinition
from thalos_bot.memory.assembly import build_memory
from thalos_bot.schedules.store import ScheduleStore
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.service.tool_sources import BuiltinSettings, builtin_sources, detached_sources
from thalos_bot.skills.store import SkillStore
from thalos_bot.storage.database import MEMORY, Database
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot.tools.mcp import McpServers
from thalos_bot.tools.source import ToolSource


class ToolCommandSettings(BuiltinSettings, Protocol):
    """The parts of ``Settings`` this command reads."""

    @property
    def mcp_servers(self) -> Sequence[McpServerSettings]: ...

    @property
    def tool_policies(self) -> Sequence[ToolPolicySettings]: ...

    @property
    def tools(self) -> ToolsSettings: ...


def run(args: argparse.Namespace) -> int:
    """The CLI handler: ``args.config`` and ``args.agent``."""
    loaded = load_settings(args.config)
    return run_tools_command(loaded.settings, build_catalog(loaded.settings), args.agent)


def run_tools_command(
    settings: ToolCommandSettings, agents: AgentCatalog, agent_id: str | None = None
) -> int:
    """Print the report. Exit 0 when every enabled server started, 1 when one failed,
    2 for an unknown agent."""
    chosen: list[AgentDefinition] = list(agents)
    if agent_id is not None:
        agent = agents.find(agent_id)
        if agent is None:
            known = ", ".join(a.id for a in agents)
            print(
                f"error: there is no agent called {agent_id!r} (agents: {known})", file=sys.stderr
            )
            return 2
        chosen = [agent]
    report, healthy = anyio.run(collect_report, settings, chosen)
    print(report)
    return 0 if healthy else 1


async def collect_report(
    settings: ToolCommandSettings, agents: Sequence[AgentDefinition]
) -> tuple[str, bool]:
    """Start the servers, build the report, stop them. Also says whether all started."""
    async with (
        await Database.open(MEMORY, migrations=ALL_MIGRATIONS) as scratch,
        McpServers.start(settings.mcp_servers, settings.tools) as servers,
    ):
        memory = build_memory(scratch, settings.memory)
        builtin = builtin_sources(
            settings,
            memory=memory.source,
            skills=SkillStore(scratch),
            detached=detached_sources(AgentCatalog(agents), ScheduleStore(scratch)),
        )
        catalog = SourceCatalog.from_settings(
            [*servers.sources, *builtin], settings.tool_policies, settings.tools
        )
        healthy = all(s.status().state in {"ready", "disabled"} for s in catalog.sources)
        return format_report(catalog.sources, catalog, agents, settings.tool_policies), healthy


def _table(rows: Iterable[tuple[str, str]], indent: str = "  ") -> list[str]:
    rows = list(rows)
    width = max((len(left) for left, _ in rows), default=0)
    return [f"{indent}{left.ljust(width)}  {right}".rstrip() for left, right in rows]


def _describe_policy(policy: ToolPolicySettings) -> str:
    parts = ["requires " + ", ".join(policy.require_roles)] if policy.require_roles else []
    if policy.action is not None:
        parts.append(policy.action)
    return "; ".join(parts)


def format_report(
    sources: Sequence[ToolSource],
    catalog: SourceCatalog,
    agents: Sequence[AgentDefinition],
    policies: Sequence[ToolPolicySettings] = (),
) -> str:
    lines = [f"tool sources ({len(sources)}):"]
    if sources:
        lines += _table((s.name, s.status().describe()) for s in sources)
    else:
        lines.append("  none configured")
    if policies:
        lines.append("tool policies:")
        lines += _table((p.tool, _describe_policy(p)) for p in policies)
    for agent in agents:
        entries = catalog.entries_for(agent)
        count = f"{len(entries)} tool{'' if len(entries) == 1 else 's'}" if entries else "no tools"
        lines.append(f"agent {agent.id} ({agent.name}): {count}")
        rows: list[tuple[str, str]] = []
        for entry in entries:
            notes = []
            if entry.required_roles:
                notes.append("requires " + ", ".join(sorted(entry.required_roles)))
            action = catalog.policies.action(entry.qualified, entry.natural)
            if action != "allow":
                notes.append(action)
            if entry.qualified != entry.natural:
                notes.append(f"{entry.source.name} tool {entry.tool.name!r}")
            rows.append((entry.qualified, "; ".join(notes)))
        lines += _table(rows)
    return "\n".join(lines)
