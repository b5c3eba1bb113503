"""``thalos-bot doctor`` checks for the Discord channel: the token, the Message Content
intent, and that each listed server channel is one the bot can see (through discord.py's
own REST client, pointed where the channel would be).

discord.py retries a 500, 502, 504 or 524 itself (sleeping 1 + 2n s) and waits out a
429, so within the checks' time limit a Discord that keeps failing would look like a
network that never answered: the last answer seen is kept, and said instead."""

from __future__ import annotations

import asyncio

import aiohttp
import anyio
import discord
from discord.http import HTTPClient

from thalos_bot.channels.checks import Check, skipped, unreachable
from thalos_bot_discord import TOKEN_ENV
from thalos_bot_discord.client import DISCORD_API, RateLimitTap, prepare
from thalos_bot_discord.config import DiscordConfig

MESSAGE_CONTENT_FLAGS = (1 << 18) | (1 << 19)
"""GATEWAY_MESSAGE_CONTENT and GATEWAY_MESSAGE_CONTENT_LIMITED (the portal's toggle)."""
ME = "Discord token (users/@me)"
INTENT = "Discord Message Content intent"
TIMEOUT = 15.0


async def discord_checks(config: DiscordConfig, *, offline: bool) -> list[Check]:
    if (skip := skipped(ME, TOKEN_ENV, offline=offline)) is not None:
        return [skip]
    token = prepare(config)
    tap = RateLimitTap()
    loop = asyncio.get_running_loop()
    http = HTTPClient(loop, http_trace=tap.trace(), max_ratelimit_timeout=TIMEOUT)
    try:
        with anyio.fail_after(TIMEOUT):
            return await _checks(http, token, config)
    except discord.LoginFailure:
        fix = "reset it in the Developer Portal (Bot, Reset Token) and copy it again"
        return [Check(ME, "fail", f"Discord rejected the token in {TOKEN_ENV}", fix)]
    except discord.HTTPException as exc:
        return [Check(ME, "fail", f"Discord answered {exc.status}", "try again later")]
    except discord.RateLimited as exc:
        detail = f"Discord answered 429: rate limited for {exc.retry_after:.0f} s"
        return [Check(ME, "fail", detail, "try again after that")]
    except (aiohttp.ClientError, OSError) as exc:  # TimeoutError is an OSError
        last = tap.last or 0
        if isinstance(exc, TimeoutError) and (last >= 500 or last == 429):
            detail = f"Discord answered {last} to every try for {TIMEOUT:.0f} s"
            return [Check(ME, "fail", detail, "try again later")]
        return [unreachable(ME, config.base_url or DISCORD_API, exc)]
    finally:
        await http.close()


async def _checks(http: HTTPClient, token: str, config: DiscordConfig) -> list[Check]:
    me = await http.static_login(token)
    checks = [Check(ME, "ok", f"{me.get('username')} (id {me.get('id')})")]
    try:
        flags = int((await http.application_info()).get("flags", 0))
    except discord.HTTPException:
        flags = 0  # not readable: said as off
    if flags & MESSAGE_CONTENT_FLAGS:
        checks.append(Check(INTENT, "ok"))
    else:
        off = "the Message Content intent is off, so the gateway would close with 4014"
        fix = "turn it on: Developer Portal, Bot, Privileged Gateway Intents"
        checks.append(Check(INTENT, "fail", off, fix))
    for channel_id in config.guild_channels:
        name = f"Discord channel {channel_id}"
        try:
            await http.get_channel(channel_id)
        except discord.HTTPException as exc:
            fix = "invite the bot to that server (docs/discord.md) and let it view the channel"
            checks.append(Check(name, "fail", f"the bot cannot see it ({exc.status})", fix))
        else:
            checks.append(Check(name, "ok"))
    return checks
