"""What ``thalos-bot check`` says about model providers: each one the agents use (kind,
model, endpoint, key, context window, whether its server answers a connection), and each
agent's chain, with a note where an agent's tools cannot be offered."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

from thalos_bot.config.models import Settings
from thalos_bot.config.providers import ProviderSpec

CONNECT_TIMEOUT_S = 1.0


def reachable(base_url: str | None) -> str:
    """Whether a TCP connection to ``base_url`` opens (a second at most)."""
    if base_url is None:
        return "the SDK's default endpoint (thalos-bot doctor asks it)"
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            return f"{base_url} reachable"
    except OSError:
        return f"{base_url} NOT reachable"


def _key(spec: ProviderSpec) -> str:
    env = spec.key_env
    if env is None:
        return "no key"
    return f"key from {env}" + ("" if os.environ.get(env) else f" (not set: {env})")


def _window(spec: ProviderSpec) -> str:
    if spec.context_window is not None:
        return f"context window {spec.context_window:,}"
    if spec.kind == "openai":
        return "context window asked of the server"
    return "context window 200,000"


def provider_lines(settings: Settings, *, probe: bool = True) -> list[str]:
    lines = ["providers:"]
    for spec in settings.used_provider_specs():
        where = reachable(spec.base_url) if probe and spec.kind != "scripted" else spec.endpoint
        extras = [] if spec.tools else ["no tool calling"]
        extras += [] if spec.vision else ["no images"]
        lines.append(
            f"  {spec.id}: {spec.kind}, model {spec.model}, max {spec.max_output_tokens} "
            f"output tokens, {_key(spec)}, {_window(spec)}, " + ", ".join([where, *extras])
        )
    lines.append("models:")
    for agent in settings.agents:
        route = settings.route(agent)
        lines.append(f"  {agent.id}: {route.describe()}")
        if not route.primary.tools and agent.tools:
            lines.append(
                f"  note: {agent.id}'s tools are not offered: provider {route.primary.id!r} "
                "has no tool calling (tools = false)"
            )
    return lines
