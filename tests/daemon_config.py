"""The ``bot.toml`` of a whole daemon talking to the Telegram fake, for the tests that
run one (in-process through ``open_host`` or as ``thalos-bot run``)."""

from __future__ import annotations

SCRIPTED = 'kind = "scripted"'


def anthropic_provider(base_url: str) -> str:
    """``[provider]`` lines for the Anthropic fake, with no SDK retries."""
    return f'base_url = "{base_url}"\nmax_retries = 0'


def telegram_daemon_config(
    telegram_url: str,
    user: int,
    *,
    provider: str = SCRIPTED,
    flush_interval: str = "0.1s",
    sections: str = "",
    telegram: str = "",
) -> str:
    """Telegram on (``user`` allowed, a 1 s long poll), the console off. ``sections`` are
    more tables (``[limits]``, ``[[agents]]`` ...); ``telegram`` more keys of
    ``[channels.telegram]``."""
    return f"""
state_dir = "state"
[provider]
{provider}
[pump]
flush_interval = "{flush_interval}"
{sections}
[channels.console]
enabled = false
[channels.telegram]
enabled = true
base_url = "{telegram_url}"
allowed_user_ids = [{user}]
poll_timeout = 1
{telegram}
"""
