"""discord.py's client as the channel drives it: pointed at Discord (or a stand-in),
given the intents the bot needs, its events passed on in order.

discord.py builds every REST URL from the class attribute ``discord.http.Route.BASE`` and
opens the gateway at ``DiscordWebSocket.DEFAULT_GATEWAY`` (later resumes go to the
``resume_gateway_url`` READY names). :func:`prepare` sets both from ``base_url`` and
``gateway_url``, or back to Discord's own; no method of the library is patched.

Intents: GUILDS (to know the listed channels and threads), GUILD_MESSAGES and
DIRECT_MESSAGES (to hear messages), and the privileged MESSAGE_CONTENT, without which a
server message's text arrives empty unless the bot is mentioned in it. It must be turned
on for the bot in the Developer Portal, or Discord closes the gateway with 4014.

An event that cannot be read is skipped, never the end of the connection: discord.py
turns each dispatch into its objects with the state's parsers (one per event name,
``ConnectionState.parsers``), and a parser that raises (a field missing or of another
type than documented) raises out of the gateway's read loop, which ``Client.connect``
passes on. Each parser is wrapped (:func:`_guarded`) so that such an event is logged by
its name and error type (never its content) and the next one read as usual.

The 429s discord.py waits out by itself are told to the channel all the same
(:class:`RateLimitTap`). discord.py answers a 429 by sleeping its ``retry_after`` and
trying again, inside its HTTP client: the delivery engine never hears of it, so on
replicas the next owner of the connection (after a kill during that sleep) would send
into the same bucket at once. An aiohttp trace on discord.py's session sees every
response; a 429 on a channel's route (``/channels/<id>/...``) is passed on with its wait
(``Retry-After``, or the longer ``X-RateLimit-Reset-After``) to
:attr:`RateLimitTap.told`, which the channel points at its adapter
(:meth:`~thalos_bot_discord.wire.DiscordWire.tell`). A global 429
(``X-RateLimit-Global``) holds every channel, and is passed on as such (``None``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import aiohttp
import anyio
import discord
import structlog
import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route

from thalos_bot.channels.pacing.waits import header_wait
from thalos_bot.channels.ports import EXIT_PLATFORM_SETTING, EXIT_UNAUTHORIZED, ChannelFatalError
from thalos_bot.channels.reconnect import Reconnecting
from thalos_bot.channels.secrets import quiet_loggers, secret_from_env
from thalos_bot_discord import TOKEN_ENV
from thalos_bot_discord.config import DiscordConfig

log = structlog.get_logger(__name__)

DISCORD_API = "https://discord.com/api/v10"
DISCORD_GATEWAY = "wss://gateway.discord.gg/"
LIBRARY_LOGGERS = ("discord", "discord.client", "discord.gateway", "discord.http", "discord.state")
READY = "ready"
Event = discord.Message | str
"""What the client passes on: a message, or :data:`READY` for a new gateway session."""
CHANNEL_ROUTE = re.compile(r"/channels/(\d+)(?:/|$)")
WAITS = ("Retry-After", "X-RateLimit-Reset-After")
"""A 429's waits: the longer counts."""


def prepare(config: DiscordConfig) -> str:
    """The bot token, read once discord.py is pointed where ``config`` says and its
    loggers are held at warnings (it logs at INFO on every reconnect; ours say more)."""
    quiet_loggers(LIBRARY_LOGGERS)
    Route.BASE = config.base_url or DISCORD_API
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(config.gateway_url or DISCORD_GATEWAY)
    what = "the bot token from the Developer Portal (Bot, Reset Token)"
    return secret_from_env(TOKEN_ENV, "discord", what)


class RateLimitTap:
    def __init__(self) -> None:
        self.told: Callable[[int | None, float], None] = lambda channel, seconds: None
        """Each 429: (the Discord channel id, or None when global; seconds to wait)."""
        self.last: int | None = None
        """The status of the last response (what the doctor says when Discord keeps
        failing)."""

    def trace(self) -> aiohttp.TraceConfig:
        config = aiohttp.TraceConfig()
        config.on_request_end.append(self._ended)
        return config

    async def _ended(
        self,
        session: aiohttp.ClientSession,
        context: SimpleNamespace,
        params: aiohttp.TraceRequestEndParams,
    ) -> None:
        self.last = params.response.status
        if self.last != 429:
            return
        seconds = header_wait(params.response.headers, WAITS)
        if seconds is None:
            return
        if params.response.headers.get("X-RateLimit-Global"):
            self.told(None, seconds)
        elif (found := CHANNEL_ROUTE.search(params.url.path)) is not None:
            self.told(int(found.group(1)), seconds)


def no_pings() -> discord.AllowedMentions:
    """What every message the bot posts or edits may ping: nobody named in its text.

    Answers are model text, and model text may carry a prompt injection's ``@everyone``,
    ``@here``, a role or a person's mention. Discord pings all of them unless the
    request's ``allowed_mentions`` says otherwise; given to the client, it goes with
    every send, edit and interaction answer.
    """
    return discord.AllowedMentions.none()


class Bot(discord.Client):
    """discord.py's client with the channel's handlers (the documented event methods).

    discord.py runs each handler as a task of its own; these only pass the event on, in
    order, to :attr:`events`, which the channel's task group reads, so that nothing of
    the channel runs outside it (and a shutdown cancels it all).
    """

    def __init__(self, config: DiscordConfig, trace: aiohttp.TraceConfig | None = None) -> None:
        super().__init__(
            intents=discord.Intents(
                guilds=True, guild_messages=True, dm_messages=True, message_content=True
            ),
            guild_ready_timeout=config.guild_ready_timeout,
            max_messages=None,
            allowed_mentions=no_pings(),
            http_trace=trace or aiohttp.TraceConfig(),
        )
        parsers = self._connection.parsers
        for name, parse in list(parsers.items()):
            parsers[name] = _guarded(name, parse)
        self.events, self.received = anyio.create_memory_object_stream[Event](math.inf)
        self.link = Reconnecting("discord_gateway")
        """What the core reads of the gateway (discord.py reconnects it by itself)."""
        self.pressed: Callable[[discord.Interaction], Awaitable[None]] | None = None
        """What a component interaction (a question's button) goes to."""

    def dispatch(self, event: str, /, *args: Any, **kwargs: Any) -> None:
        # discord.py's own tasks (its READY delay) may still fire once the channel has
        # closed the client; a closed client takes no more events.
        if not self.is_closed():
            super().dispatch(event, *args, **kwargs)

    async def on_ready(self) -> None:
        self.link.opened()
        log.info("discord_ready", user=str(self.user), guilds=len(self.guilds))
        self._pass_on(READY)

    async def on_resumed(self) -> None:
        self.link.opened()
        log.info("discord_resumed")

    async def on_disconnect(self) -> None:
        self.link.lost("gateway disconnected")

    async def on_message(self, message: discord.Message) -> None:
        self._pass_on(message)

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        # Answered here, at once: Discord waits 3 s for an interaction's response.
        if interaction.type is discord.InteractionType.component and self.pressed is not None:
            await self.pressed(interaction)

    async def close(self) -> None:
        self.events.close()
        self.received.close()
        await super().close()

    def _pass_on(self, event: Event) -> None:
        try:
            self.events.send_nowait(event)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.info("discord_event_after_shutdown")

    async def login_or_fail(self, token: str) -> None:
        try:
            await self.login(token)
        except discord.LoginFailure:
            raise ChannelFatalError(
                f"channels.discord: Discord refused the token in {TOKEN_ENV} (401); "
                "reset it in the Developer Portal (Bot, Reset Token)",
                EXIT_UNAUTHORIZED,
            ) from None

    async def run_gateway(self) -> None:
        try:
            await self.connect(reconnect=True)
        except discord.PrivilegedIntentsRequired:
            raise ChannelFatalError(
                "channels.discord: the bot lacks the Message Content intent; turn it on in "
                "the Developer Portal (Bot, Privileged Gateway Intents) and restart",
                EXIT_PLATFORM_SETTING,
            ) from None


def _guarded(name: str, parse: Callable[[Any], None]) -> Callable[[Any], None]:
    def read(data: Any) -> None:
        try:
            parse(data)
        except Exception as exc:  # noqa: BLE001 # any field of any shape: skip the event
            log.warning("discord_event_unreadable", discord_event=name, error=type(exc).__name__)

    return read
