"""``thalos-bot doctor`` checks for the Discord channel: the token, the Message Content
intent, and that each listed server channel is one the bot can see."""

from __future__ import annotations

import os
from typing import Any

import aiohttp

from thalos_bot.channels.checks import Check
from thalos_bot.domain.unreachable import unreachable_cause
from thalos_bot_discord import TOKEN_ENV
from thalos_bot_discord.client import DISCORD_API
from thalos_bot_discord.config import DiscordConfig

MESSAGE_CONTENT_FLAGS = (1 << 18) | (1 << 19)
"""GATEWAY_MESSAGE_CONTENT and GATEWAY_MESSAGE_CONTENT_LIMITED (the portal's toggle)."""
USER_AGENT = "DiscordBot (https://github.com/thalos-bot, 0.1)"
ME = "Discord token (users/@me)"


async def _get(session: aiohttp.ClientSession, url: str) -> tuple[int, Any]:
    async with session.get(url) as response:
        body = await response.json(content_type=None)
        return response.status, body


async def discord_checks(config: DiscordConfig, *, offline: bool) -> list[Check]:
    if offline:
        return [Check(ME, "skip", "--offline")]
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        return [Check(ME, "skip", f"{TOKEN_ENV} is not set")]
    base = config.base_url or DISCORD_API
    headers = {"Authorization": f"Bot {token}", "User-Agent": USER_AGENT}
    checks: list[Check] = []
    timeout = aiohttp.ClientTimeout(total=15)
    try:
        async with aiohttp.ClientSession(headers=headers, timeout=timeout) as session:
            status, me = await _get(session, f"{base}/users/@me")
            if status == 401:
                return [
                    Check(
                        ME,
                        "fail",
                        f"Discord rejected the token in {TOKEN_ENV}",
                        "reset it in the Developer Portal (Bot, Reset Token) and copy it again",
                    )
                ]
            if status != 200 or not isinstance(me, dict):
                return [Check(ME, "fail", f"Discord answered {status}", "try again later")]
            checks.append(Check(ME, "ok", f"{me.get('username')} (id {me.get('id')})"))
            status, app = await _get(session, f"{base}/oauth2/applications/@me")
            flags = int(app.get("flags", 0)) if status == 200 and isinstance(app, dict) else 0
            if flags & MESSAGE_CONTENT_FLAGS:
                checks.append(Check("Discord Message Content intent", "ok"))
            else:
                checks.append(
                    Check(
                        "Discord Message Content intent",
                        "fail",
                        "the Message Content intent is off, so the gateway would close with 4014",
                        "turn it on: Developer Portal, Bot, Privileged Gateway Intents",
                    )
                )
            for channel_id in config.guild_channels:
                status, _ = await _get(session, f"{base}/channels/{channel_id}")
                name = f"Discord channel {channel_id}"
                if status == 200:
                    checks.append(Check(name, "ok"))
                else:
                    checks.append(
                        Check(
                            name,
                            "fail",
                            f"the bot cannot see it ({status})",
                            "invite the bot to that server (docs/discord.md) and let it "
                            "view the channel",
                        )
                    )
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        checks.append(
            Check(
                ME,
                "fail",
                f"cannot reach {base}: {unreachable_cause(exc)}",
                "check the network and any proxy, or base_url if set",
            )
        )
    return checks
