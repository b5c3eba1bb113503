"""The 429s discord.py waits out by itself, told to the channel all the same.

discord.py answers a 429 by sleeping its ``retry_after`` and trying again, inside its
HTTP client: the delivery engine never hears of it, so on replicas the next owner of
the connection (after a kill during that sleep) would send into the same bucket at
once. An aiohttp trace on discord.py's session sees every response; a 429 on a
channel's route (``/channels/<id>/...``) is passed on with its wait (``Retry-After``,
or the longer ``X-RateLimit-Reset-After``) to :attr:`RateLimitTap.told`, which the
channel points at its adapter (:func:`tell_chat`). A global 429
(``X-RateLimit-Global``) holds every channel, and is passed on as such (``None``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import aiohttp

from thalos_bot.channels.delivery.channel import WireAdapter
from thalos_bot.channels.pacing.waits import header_wait
from thalos_bot_discord.addressing import Place
from thalos_bot_discord.wire import DiscordWire

CHANNEL_ROUTE = re.compile(r"/channels/(\d+)(?:/|$)")
WAITS = ("Retry-After", "X-RateLimit-Reset-After")
"""A 429's waits: the longer counts."""


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


def tell_chat(
    adapter: WireAdapter[Place, Any], wire: DiscordWire, channel_id: int | None, seconds: float
) -> None:
    """A 429 discord.py met on a Discord channel (and waits out itself): told, for the
    other replicas, as the chat the adapter writes there (a global one: every chat)."""
    if channel_id is None:
        adapter.told(None, seconds)
        return
    for place in adapter.known_chats():
        if wire.channel_of(place) == channel_id:
            adapter.told(place, seconds)
            return
