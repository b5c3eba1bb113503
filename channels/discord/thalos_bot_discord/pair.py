"""``thalos-bot discord pair``: the kit's flow
(:func:`~thalos_bot.channels.admission.pair_command.pair_with`) around Discord's part: it
connects as the bot and waits for a direct message holding the code (nobody is
answered meanwhile), then tells the sender in that DM."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial

import anyio
import discord

from thalos_bot.channels.admission import pair_command as kit
from thalos_bot_discord.client import Bot, prepare
from thalos_bot_discord.config import DiscordConfig
from thalos_bot_discord.manifest import manifest


@dataclass
class DiscordSide(kit.Hearing):
    client: Bot
    group: anyio.abc.TaskGroup
    token: str = field(repr=False)

    async def reach(self) -> str:
        await self.client.login_or_fail(self.token)
        self.group.start_soon(self._hear)
        self.group.start_soon(self.client.run_gateway)  # the daemon's sentence for 4014
        return "your bot in a direct message"

    async def _hear(self) -> None:
        async for event in self.client.received:
            if isinstance(event, discord.Message) and event.guild is None and not event.author.bot:
                self.awaited.hear(event.content, partial(_found, event))

    async def tell(self, found: kit.Found) -> bool:
        assert isinstance(found.reply_to, int)
        dm = self.client.get_partial_messageable(found.reply_to)
        return await kit.told(dm.send(kit.PAIRED), discord.HTTPException)


def _found(message: discord.Message) -> kit.Found:
    author = message.author
    return kit.Found(author.id, f"{author} (id {author.id})", message.channel.id)


@asynccontextmanager
async def _side(config: DiscordConfig) -> AsyncIterator[DiscordSide]:
    token = prepare(config)
    client = Bot(config)
    try:
        async with anyio.create_task_group() as group:
            yield DiscordSide(client, group, token)
            group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await client.close()


pair = kit.pair_command(_side, manifest)
"""Pair, then add the sender to the ``bot.toml`` named. Returns the process exit code."""
