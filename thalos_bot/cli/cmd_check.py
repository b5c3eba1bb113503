"""``thalos-bot check``: validate the configuration and print what it describes."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping

from pydantic import BaseModel

from thalos_bot.channels.checks import DoctorChecks
from thalos_bot.channels.registry import ChannelPlugin, discover, validate_channels
from thalos_bot.cli.people_lines import people_lines
from thalos_bot.cli.provider_lines import provider_lines
from thalos_bot.config.limits import LimitsSettings
from thalos_bot.config.loader import ConfigError, LoadedConfig, load_settings
from thalos_bot.config.memory import EmbeddingSettings
from thalos_bot.config.models import Settings


def run(args: argparse.Namespace) -> int:
    loaded = load_settings(args.config)
    plugins = discover()
    channels = validate_channels(loaded.settings, loaded.label, plugins)
    settings = loaded.settings
    shared = settings.storage.target.kind == "postgresql"
    missing = missing_secrets(
        loaded.label, settings.enabled_channels(), plugins, channels, shared=shared
    )
    if missing:
        raise ConfigError(missing)
    lines = [f"{loaded.label}: valid"]
    lines.extend(provider_lines(settings))
    lines.append(f"agents ({len(settings.agents)}):")
    for agent in settings.agents:
        mark = " (default)" if agent.id == settings.default_agent_id else ""
        model = f", model {agent.model}" if agent.model else ""
        lines.append(f"  {agent.id}{mark}: {agent.name}{model} — {agent.description or '-'}")
    lines.append("channels:")
    for name, config in channels.items():
        state = "enabled" if settings.channels[name].get("enabled", False) else "disabled"
        lines.append(f"  {name} ({state}): {plugins[name].describe(config)}")
    lines.extend(people_lines(settings, channels))
    lines.append(f"memory: {_recall(settings.memory.embeddings)}")
    lines.extend(_tools(settings))
    lines.extend(_schedules(settings))
    lines.append(f"limits: {_limits(settings.limits)}")
    lines.append(f"state: {_state(loaded)}")
    print("\n".join(lines))
    return 0


def missing_secrets(
    label: str,
    enabled: list[str],
    plugins: Mapping[str, ChannelPlugin],
    channels: Mapping[str, BaseModel],
    *,
    shared: bool = False,
) -> list[str]:
    """One line for each variable an enabled channel needs (on a PostgreSQL store when
    ``shared``) and the environment lacks:
    ``run`` refuses to start without it, so ``check`` does not call the file valid."""
    needed: list[tuple[str, str]] = []
    for name in enabled:
        plugin: object = plugins.get(name)  # a plug-in may also implement DoctorChecks
        config = channels.get(name)
        if isinstance(plugin, DoctorChecks) and config is not None:
            needed.extend((name, v) for v in plugin.required_env(config, shared=shared))
    problems: list[str] = [
        f"{label}: channels.{name} is enabled and {variable} is not set, so `run` would "
        f"refuse to start; export {variable}=... (or put it in the secrets file), or set "
        f"enabled = false in [channels.{name}]"
        for name, variable in needed
        if not os.environ.get(variable, "").strip()
    ]
    return problems


def _state(loaded: LoadedConfig) -> str:
    target = loaded.settings.storage.target
    if target.kind == "postgresql" and target.url is not None:
        from thalos_bot.storage.pg.database import redacted

        return f"{redacted(target.url)} (shared), {loaded.local_path} (this machine's own)"
    return str(loaded.database_path)


def _tools(settings: Settings) -> list[str]:
    lines = [
        f"MCP servers ({len(settings.mcp_servers)}):"
        if settings.mcp_servers
        else "MCP servers: none"
    ]
    for server in settings.mcp_servers:
        where = server.url or " ".join([server.command or "", *server.args]).strip()
        state = "" if server.enabled else " (disabled)"
        lines.append(f"  {server.name}{state}: {where}")
    if settings.tool_policies:
        lines.append(
            f"tool policies ({len(settings.tool_policies)}; the most specific match decides):"
        )
        for policy in settings.tool_policies:
            roles = ", ".join(policy.require_roles)
            needs = f" for roles {roles}" if roles else ""
            lines.append(f"  {policy.tool}: {policy.action or 'roles only'}{needs}")
    else:
        lines.append("tool policies: none (every tool runs)")
    return lines


def _schedules(settings: Settings) -> list[str]:
    if not settings.schedules:
        return ["schedules in bot.toml: none"]
    lines = [f"schedules in bot.toml ({len(settings.schedules)}):"]
    for schedule in settings.schedules:
        timing = (
            f"cron '{schedule.cron}' ({schedule.timezone})"
            if schedule.cron
            else f"once at {schedule.at}"
        )
        lines.append(
            f"  {schedule.id}: {timing}, to {schedule.deliver_to}, as {schedule.principal}"
        )
    return lines


def _limits(limits: LimitsSettings) -> str:
    parts = [
        f"{limits.session_tokens:,} tokens a session" if limits.session_tokens else "",
        f"{limits.daily_tokens:,} tokens a day" if limits.daily_tokens else "",
        f"${limits.daily_cost_usd:,.2f} a day" if limits.daily_cost_usd else "",
        f"{limits.turn_tool_rounds} tool rounds a turn",
    ]
    return ", ".join(part for part in parts if part) + f" (days in {limits.timezone})"


def _recall(embeddings: EmbeddingSettings) -> str:
    if embeddings.mode == "off":
        return "keyword recall only (BM25)"
    if embeddings.mode == "local":
        return f"keywords and meaning, local model {embeddings.folder()}"
    if embeddings.mode == "endpoint":
        return f"keywords and meaning, endpoint {embeddings.base_url} model {embeddings.model}"
    return "keywords and meaning, embedded WordLlama"
