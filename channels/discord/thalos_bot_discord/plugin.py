"""Registers the Discord channel under the ``thalos_bot.channels`` entry-point group."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import discord
import structlog

from thalos_bot.channels.admission.seen import Seen
from thalos_bot.channels.delivery.channel import rendering_for
from thalos_bot.channels.delivery.markbook import MarkBook
from thalos_bot.channels.health import ChannelHealth
from thalos_bot.channels.pacing.gate import GlobalPacer
from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.channels.running import Runtime, delivering
from thalos_bot.domain.ids import ChannelId
from thalos_bot_discord import TOKEN_ENV
from thalos_bot_discord.addressing import Place
from thalos_bot_discord.approvals import DiscordApprovals
from thalos_bot_discord.catchup import imported
from thalos_bot_discord.client import (
    EXIT_DISCORD_INTENTS,
    EXIT_DISCORD_UNAUTHORIZED,
    intents,
    no_pings,
    point_at,
    quiet_library_loggers,
    read_token,
)
from thalos_bot_discord.commands import command_tree, register
from thalos_bot_discord.config import DiscordConfig
from thalos_bot_discord.decoding import guard_parsers
from thalos_bot_discord.inbound import place_of
from thalos_bot_discord.intake import DiscordFiles
from thalos_bot_discord.receiver import READY, Event, Receiver
from thalos_bot_discord.told import RateLimitTap, tell_chat
from thalos_bot_discord.wire import GLOBAL_PER_SECOND, DiscordWire

log = structlog.get_logger(__name__)

CHANNEL = ChannelId("discord")


class Bot(discord.Client):
    """discord.py's client with the channel's handlers (the documented event methods),
    and its event parsers guarded (:mod:`.decoding`: an unreadable event is skipped).

    discord.py runs each handler as a task of its own; these only pass the event on, in
    order, to :attr:`events`, which the channel's task group reads, so that nothing of
    the channel runs outside it (and a shutdown cancels it all).
    """

    def __init__(self, config: DiscordConfig, tap: RateLimitTap) -> None:
        super().__init__(
            intents=intents(),
            guild_ready_timeout=config.guild_ready_timeout,
            max_messages=None,
            allowed_mentions=no_pings(),
            http_trace=tap.trace(),
        )
        guard_parsers(self._connection.parsers)
        self.events, self.received = anyio.create_memory_object_stream[Event](math.inf)
        self.health = ChannelHealth()
        self.receiving = anyio.Event()
        self.seen_ready = False
        self.pressed: Callable[[discord.Interaction], Awaitable[None]] | None = None
        """What a component interaction (a question's button) goes to."""

    def dispatch(self, event: str, /, *args: Any, **kwargs: Any) -> None:
        # discord.py's own tasks (its READY delay) may still fire once the channel has
        # closed the client; a closed client takes no more events.
        if not self.is_closed():
            super().dispatch(event, *args, **kwargs)

    async def on_ready(self) -> None:
        self.health.ok()
        self.receiving.set()
        log.info("discord_ready", user=str(self.user), guilds=len(self.guilds))
        self._pass_on(READY)

    async def on_resumed(self) -> None:
        self.health.ok()
        log.info("discord_resumed")

    async def on_disconnect(self) -> None:
        self.health.failed("gateway disconnected")

    async def on_message(self, message: discord.Message) -> None:
        self._pass_on(message)

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        # Answered here, at once: Discord waits 3 s for an interaction's response.
        if interaction.type is discord.InteractionType.component and self.pressed is not None:
            await self.pressed(interaction)

    def _pass_on(self, event: Event) -> None:
        try:
            self.events.send_nowait(event)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.info("discord_event_after_shutdown")


@asynccontextmanager
async def _open(
    config: DiscordConfig, host: ChannelHost, *, receive: bool = True
) -> AsyncIterator[ChannelPair]:
    """The channel; without ``receive``, its send-only side: logged in for Discord's
    REST API, no gateway session (what every replica opens to run the turns it holds)."""
    quiet_library_loggers()
    token = read_token()
    point_at(config.base_url, config.gateway_url)
    tap = RateLimitTap()
    bot = Bot(config, tap)
    seen = Seen()
    marks = MarkBook(host.marks, CHANNEL)
    if receive:
        await marks.load()
        imported(host.state_dir, marks)
    wire = DiscordWire(
        bot,
        GlobalPacer(GLOBAL_PER_SECOND),
        edits_per_window=config.edits_per_window,
        edit_window=config.edit_window,
    )
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
            tap.told = partial(tell_chat, adapter, wire)  # discord.py's own 429 waits too
            if not receive:
                await _login(bot, token)
                name = str(bot.user) if bot.user is not None else "(unknown)"
                yield ChannelPair(served.inlet, adapter, f"discord: sending as {name}")
                return
            group.start_soon(marks.run, name="discord-marks")
            receiver = Receiver(
                bot, config, CHANNEL, wire, served.inlet, marks, seen, served.seats, served.intake
            )
            bot.pressed = lambda interaction: served.approvals.on_interaction(
                interaction, place_of(config, interaction.channel, interaction.user.id)
            )
            tree = command_tree(bot, receiver.run_command)
            group.start_soon(receiver.run, bot.received)
            await _login(bot, token)
            if config.register_commands:  # the application's id is known once logged in
                await register(tree)
            group.start_soon(_connect, bot)
            name = str(bot.user) if bot.user is not None else "(unknown)"
            yield ChannelPair(
                served.inlet,
                adapter,
                f"discord: gateway as {name}",
                receiving=bot.receiving,
                health=bot.health,
            )
    finally:
        bot.events.close()
        bot.received.close()
        with anyio.CancelScope(shield=True):
            if receive:
                await marks.flush()  # what was admitted is known to the next start
            await bot.close()


async def _login(bot: discord.Client, token: str) -> None:
    try:
        await bot.login(token)
    except discord.LoginFailure:
        raise ChannelFatalError(
            f"channels.discord: Discord refused the token in {TOKEN_ENV} (401); "
            "reset it in the Developer Portal (Bot, Reset Token)",
            EXIT_DISCORD_UNAUTHORIZED,
        ) from None


@asynccontextmanager
async def _open_sending(config: DiscordConfig, host: ChannelHost) -> AsyncIterator[ChannelPair]:
    async with _open(config, host, receive=False) as pair:
        yield pair


async def _connect(bot: discord.Client) -> None:
    try:
        await bot.connect(reconnect=True)
    except discord.PrivilegedIntentsRequired:
        raise ChannelFatalError(
            "channels.discord: the bot lacks the Message Content intent; turn it on in the "
            "Developer Portal (Bot, Privileged Gateway Intents) and restart",
            EXIT_DISCORD_INTENTS,
        ) from None


plugin = Runtime(DiscordConfig, _open, _open_sending)
