"""Writes to Discord through discord.py, and what their failures mean.

Every post carries a ``nonce``, which discord.py sends with ``enforce_nonce``: should a
post fail in transit (the connection dropped, a timeout, a 5xx after discord.py's own
retries), it is tried again with the same nonce, and Discord hands back the message the
first try created instead of posting a second one. 429s are discord.py's: it waits each
one's ``retry_after`` and tries again. A refusal (4xx) is final and logged by its code;
the person never sees Discord's text.
"""

from __future__ import annotations

import asyncio
import io
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import anyio
import discord
import structlog

from thalos_bot_discord.pacing import ChannelPace

log = structlog.get_logger(__name__)

UNKNOWN_MESSAGE = 10008
TRANSIENT = (aiohttp.ClientError, OSError, asyncio.TimeoutError, discord.DiscordServerError)


def new_nonce() -> str:
    """A nonce base (``<base>.<part>`` stays within Discord's 25 characters)."""
    return secrets.token_hex(8)


@dataclass(frozen=True, slots=True)
class Image:
    data: bytes
    filename: str


class Refused(Exception):  # noqa: N818 - a refusal, named as the platform's
    """Discord refused the write for good (its JSON error code, 0 when none)."""

    def __init__(self, code: int, status: int) -> None:
        super().__init__(f"discord refused the write: {status} code {code}")
        self.code = code
        self.status = status


GLOBAL_PER_SECOND = 40
"""Discord allows a bot 50 requests a second in all; a 429 past that closes every route
to the bot until it runs out. The channel's own writes keep to 40, leaving room for the
requests discord.py makes by itself (login, command registration, fetches), so a burst
across many channels (a notice to everyone, many answers ending at once) is paced, not
refused."""


class Writer:
    def __init__(
        self, client: discord.Client, *, attempts: int, backoff_initial: float, backoff_max: float
    ) -> None:
        self._client = client
        self._attempts = attempts
        self._backoff = (backoff_initial, backoff_max)
        self._global = ChannelPace(GLOBAL_PER_SECOND, 1.0)

    async def turn(self) -> None:
        """Wait for room under the global limit before one more request."""
        await self._global.slot()

    async def _retrying(self, what: str, channel_id: int, call: Any) -> Any:
        delay = self._backoff[0]
        for attempt in range(1, self._attempts + 1):
            try:
                await self.turn()
                return await call()
            except discord.HTTPException as exc:
                if isinstance(exc, discord.DiscordServerError) and attempt < self._attempts:
                    pass
                else:
                    log.warning(
                        "discord_write_refused",
                        what=what,
                        channel=channel_id,
                        status=exc.status,
                        code=exc.code,
                    )
                    raise Refused(exc.code, exc.status) from None
            except TRANSIENT as exc:
                if attempt == self._attempts:
                    log.warning(
                        "discord_write_failed",
                        what=what,
                        channel=channel_id,
                        error=type(exc).__name__,
                        attempts=attempt,
                    )
                    raise Refused(0, 0) from None
                log.info(
                    "discord_write_retry",
                    what=what,
                    channel=channel_id,
                    error=type(exc).__name__,
                    attempt=attempt,
                )
            await anyio.sleep(delay)
            delay = min(delay * 2, self._backoff[1])
        raise Refused(0, 0)

    async def post(
        self,
        channel_id: int,
        content: str,
        *,
        nonce: str,
        view: discord.ui.View | None = None,
        images: Sequence[Image] = (),
    ) -> int:
        channel = self._client.get_partial_messageable(channel_id)

        async def call() -> discord.Message:
            files = [discord.File(io.BytesIO(i.data), filename=i.filename) for i in images]
            extra: dict[str, Any] = {}
            if view is not None:
                extra["view"] = view
            if files:
                extra["files"] = files
            return await channel.send(content or None, nonce=nonce, **extra)

        message = await self._retrying("post", channel_id, call)
        return int(message.id)

    async def edit(
        self, channel_id: int, message_id: int, content: str, *, drop_view: bool = False
    ) -> None:
        partial = self._client.get_partial_messageable(channel_id).get_partial_message(message_id)

        async def call() -> object:
            if drop_view:
                return await partial.edit(content=content, view=None)
            return await partial.edit(content=content)

        await self._retrying("edit", channel_id, call)

    async def typing(self, channel_id: int) -> None:
        await self.turn()
        try:
            await self._client.get_partial_messageable(channel_id).typing()
        except (discord.HTTPException, *TRANSIENT) as exc:
            log.info("discord_typing_failed", channel=channel_id, error=type(exc).__name__)
