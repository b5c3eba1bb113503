"""discord.py, pointed at Discord (or a stand-in) and given the intents the bot needs.

discord.py builds every REST URL from the class attribute ``discord.http.Route.BASE`` and
opens the gateway at ``DiscordWebSocket.DEFAULT_GATEWAY`` (later resumes go to the
``resume_gateway_url`` READY names). :func:`point_at` sets both from ``base_url`` and
``gateway_url``, or back to Discord's own; no method of the library is patched.

Intents: GUILDS (to know the listed channels and threads), GUILD_MESSAGES and
DIRECT_MESSAGES (to hear messages), and the privileged MESSAGE_CONTENT, without which a
server message's text arrives empty unless the bot is mentioned in it. It must be turned
on for the bot in the Developer Portal, or Discord closes the gateway with 4014.
"""

from __future__ import annotations

import discord
import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route

from thalos_bot.channels.secrets import quiet_loggers, secret_from_env
from thalos_bot_discord import TOKEN_ENV

DISCORD_API = "https://discord.com/api/v10"
DISCORD_GATEWAY = "wss://gateway.discord.gg/"
EXIT_DISCORD_UNAUTHORIZED = 77
EXIT_DISCORD_CONFIG = 2
EXIT_DISCORD_INTENTS = 78
LIBRARY_LOGGERS = ("discord", "discord.client", "discord.gateway", "discord.http", "discord.state")


def read_token() -> str:
    what = "the bot token from the Developer Portal (Bot, Reset Token)"
    return secret_from_env(TOKEN_ENV, "discord", what, EXIT_DISCORD_CONFIG)


def point_at(base_url: str | None, gateway_url: str | None) -> None:
    Route.BASE = base_url or DISCORD_API
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url or DISCORD_GATEWAY)


def intents() -> discord.Intents:
    wanted = discord.Intents.none()
    wanted.guilds = True
    wanted.guild_messages = True
    wanted.dm_messages = True
    wanted.message_content = True
    return wanted


def no_pings() -> discord.AllowedMentions:
    """What every message the bot posts or edits may ping: nobody named in its text.

    Answers are model text, and model text may carry a prompt injection's ``@everyone``,
    ``@here``, a role or a person's mention. Discord pings all of them unless the
    request's ``allowed_mentions`` says otherwise; given to the client, it goes with
    every send, edit and interaction answer.
    """
    return discord.AllowedMentions.none()


def quiet_library_loggers() -> None:
    """discord.py logs at INFO on every reconnect; keep it to warnings (ours say more)."""
    quiet_loggers(LIBRARY_LOGGERS)
