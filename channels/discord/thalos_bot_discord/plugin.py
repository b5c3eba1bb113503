"""The Discord channel as the daemon runs it (the manifest names it): the gateway, the
kit's delivery engine over :class:`~.wire.DiscordWire`, and the slash commands."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import anyio

from thalos_bot.channels.delivery.channel import rendering_for
from thalos_bot.channels.delivery.markbook import MarkBook
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.channels.running import Runtime, delivering
from thalos_bot_discord.addressing import Place
from thalos_bot_discord.approvals import DiscordApprovals
from thalos_bot_discord.client import Bot, RateLimitTap, prepare
from thalos_bot_discord.config import DiscordConfig
from thalos_bot_discord.receiver import CHANNEL, DiscordFiles, Receiver, imported, place_of
from thalos_bot_discord.wire import DiscordWire


@asynccontextmanager
async def _open(
    config: DiscordConfig, host: ChannelHost, *, receive: bool = True
) -> AsyncIterator[ChannelPair]:
    """The channel; without ``receive``, its send-only side: logged in for Discord's
    REST API, no gateway session (what every replica opens to run the turns it holds)."""
    token = prepare(config)
    tap = RateLimitTap()
    bot = Bot(config, tap.trace())
    marks = MarkBook(host.marks, CHANNEL)
    if receive:
        await marks.load()
        imported(host.state_dir, marks)
    wire = DiscordWire(bot, config)
    try:
        async with delivering(
            host,
            config,
            wire,
            rendering_for(wire.limits, "edit", (config.backoff_initial, config.backoff_max)),
            parse=Place.parse,
            private=lambda place: place.kind == "dm",
            approvals=DiscordApprovals,
            files=DiscordFiles(bot),
            pacer=wire.pacer,
            flush_interval=wire.limits.chat_min_interval,  # one edit per bucket share
        ) as served:
            group, adapter = served.group, served.adapter
            tap.told = partial(wire.tell, adapter)  # discord.py's own 429 waits too
            await bot.login_or_fail(token)
            if not receive:
                yield ChannelPair(served.inlet, adapter, f"discord: sending as {bot.user}")
                return
            group.start_soon(marks.run, name="discord-marks")
            # A message reaches the pump once its mark is written: after a kill in its
            # turn, the next start's catch-up (from the marks) never hands it over again;
            # after a stop before that, the catch-up hands it over.
            served.inlet.taken = marks.taken
            assert bot.user is not None, "set by the login"
            receiver = Receiver(bot, bot.user.id, config, wire, marks, served.seats, served.intake)
            bot.pressed = lambda interaction: served.approvals.on_interaction(
                interaction, place_of(config, interaction.channel, interaction.user.id)
            )
            group.start_soon(receiver.run, bot.received)
            await receiver.serve_commands(register=config.register_commands)
            group.start_soon(bot.run_gateway)
            yield served.pair(f"discord: gateway as {bot.user}", bot.link)
    finally:
        if receive:
            await marks.close()  # what was admitted is known to the next start
        with anyio.CancelScope(shield=True):
            await bot.close()


plugin = Runtime(DiscordConfig, _open, partial(_open, receive=False))
