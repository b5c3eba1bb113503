"""``thalos-bot check``: validate the configuration and print what it describes."""

from __future__ import annotations

import argparse

from thalos_bot.channels.registry import discover, validate_channels
from thalos_bot.cli.provider_lines import provider_lines
from thalos_bot.config.loader import load_settings
from thalos_bot.config.memory import EmbeddingSettings


def run(args: argparse.Namespace) -> int:
    loaded = load_settings(args.config)
    plugins = discover()
    channels = validate_channels(loaded.settings, loaded.label, plugins)
    settings = loaded.settings
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
    lines.append(f"memory: {_recall(settings.memory.embeddings)}")
    lines.append(f"state: {loaded.database_path}")
    print("\n".join(lines))
    return 0


def _recall(embeddings: EmbeddingSettings) -> str:
    if embeddings.mode == "off":
        return "keyword recall only (BM25)"
    if embeddings.mode == "local":
        return f"keywords and meaning, local model {embeddings.folder()}"
    if embeddings.mode == "endpoint":
        return f"keywords and meaning, endpoint {embeddings.base_url} model {embeddings.model}"
    return "keywords and meaning, embedded WordLlama"
