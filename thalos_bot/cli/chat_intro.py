"""What ``thalos-bot chat`` says before the first prompt: the banner, and whether it
picks up the previous conversation."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from thalos_bot import __version__
from thalos_bot.config.loader import LoadedConfig
from thalos_bot.domain.agents import AgentCatalog
from thalos_bot.domain.clock import ago
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.storage.conversations import ConversationMap

CONSOLE = (ChannelId("console"), ConversationId("console"))


def banner(loaded: LoadedConfig, log_file: Path, *, offline: bool) -> str:
    settings = loaded.settings
    default = next(a for a in settings.agents if a.id == settings.default_agent_id)
    lines = [
        (
            f"thalos-bot {__version__} — talking to {default.name}. "
            "Type /help for commands; Ctrl-C stops an answer; Ctrl-D quits."
        ),
    ]
    if offline:
        lines.append("Offline: the scripted model echoes what you type; no API key is used.")
    else:
        route = settings.route(default)
        missing = [s.key_env for s in route.chain if s.key_env and not os.environ.get(s.key_env)]
        if missing and len(missing) == len(route.chain):
            lines.append(
                f"Note: {missing[0]} is not set. Commands work, but the agent cannot answer "
                "until you set it, or run with --offline to try the echo model."
            )
    lines.append(f"Logs: {log_file}")
    return "\n".join(lines)


async def resume_line(
    conversations: ConversationMap,
    catalog: AgentCatalog,
    idle_timeout: float | None,
    now: datetime | None = None,
) -> str | None:
    """``Continuing your conversation with Assistant from 2 hours ago; /new starts
    fresh``, when the terminal's conversation is bound to a session that has not gone
    idle (an idle one is replaced at the next message, which says so itself).
    ``idle_timeout`` is None when it is ``"off"``."""
    binding = await conversations.get(*CONSOLE)
    if binding is None:
        return None
    idle_for = (now or datetime.now(UTC)) - binding.last_activity
    if idle_timeout is not None and idle_for > timedelta(seconds=idle_timeout):
        return None  # None: idle_timeout = "off", a session never goes idle
    agent = catalog.find(binding.agent_id)
    name = agent.name if agent is not None else binding.agent_id
    return f"Continuing your conversation with {name} from {ago(idle_for)}; /new starts fresh."
