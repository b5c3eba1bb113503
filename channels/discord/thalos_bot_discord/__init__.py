"""The Discord channel for thalos-bot: the gateway through discord.py, direct messages
and listed server channels, streamed answers (the only package that imports discord.py)."""

from __future__ import annotations

TOKEN_ENV = "DISCORD_BOT_TOKEN"  # noqa: S105 - the variable's name, not a secret
"""The only place the bot token comes from."""

__all__ = ["TOKEN_ENV"]
