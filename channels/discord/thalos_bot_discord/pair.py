"""``thalos-bot discord pair``: the kit's flow
(:func:`~thalos_bot.channels.admission.pair_command.pair_with`) around Discord's part: it
connects as the bot and waits for a direct message holding the code (nobody is
answered meanwhile), then tells the sender in that DM."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import discord

from thalos_bot.channels.admission import pair_command as kit
from thalos_bot.channels.admission import pairing
from thalos_bot_discord.client import (
    intents,
    no_pings,
    point_at,
    quiet_library_loggers,
    read_token,
)
from thalos_bot_discord.config import DiscordConfig
from thalos_bot_discord.manifest import manifest


class Listening(discord.Client):
    """The bot, connected only to hear the code in a DM."""

    def __init__(self, config: DiscordConfig) -> None:
        super().__init__(
            intents=intents(),
            guild_ready_timeout=config.guild_ready_timeout,
            allowed_mentions=no_pings(),
        )
        self.awaited = kit.Awaited()

    async def on_message(self, message: discord.Message) -> None:
        if message.guild is not None or message.author.bot:
            return
        author = message.author
        self.awaited.hear(
            message.content,
            lambda: kit.Found(author.id, f"{author} (id {author.id})", message.channel.id),
        )


@dataclass
class DiscordSide:
    client: Listening
    group: anyio.abc.TaskGroup
    token: str = field(repr=False)

    async def reach(self) -> str:
        try:
            await self.client.login(self.token)
        except discord.LoginFailure:
            raise pairing.PairingError(
                "Discord refused the token in DISCORD_BOT_TOKEN; reset it in the Developer Portal"
            ) from None
        self.group.start_soon(self.client.connect)
        return "your bot in a direct message"

    async def wait(self, code: pairing.PairingCode) -> kit.Found | None:
        return await self.client.awaited.wait(code)

    async def tell(self, found: kit.Found) -> bool:
        assert isinstance(found.reply_to, int)
        try:
            dm = self.client.get_partial_messageable(found.reply_to)
            await dm.send(kit.PAIRED, nonce=secrets.token_hex(8))
        except discord.HTTPException:
            return False
        return True


@asynccontextmanager
async def _side(config: DiscordConfig) -> AsyncIterator[DiscordSide]:
    token = read_token()
    quiet_library_loggers()
    point_at(config.base_url, config.gateway_url)
    client = Listening(config)
    try:
        async with anyio.create_task_group() as group:
            yield DiscordSide(client, group, token)
            group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await client.close()


pair = kit.pair_command(_side, manifest)
"""Pair, then add the sender to the ``bot.toml`` named. Returns the process exit code."""
