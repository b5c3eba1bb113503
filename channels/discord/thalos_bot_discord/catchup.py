"""Catching up after a restart or a new gateway session.

Discord does not replay to a new session what was said while the bot was away (only a
RESUME replays, and only within the session). So the channel keeps, per served channel,
the id of the last message it admitted (a small JSON file in its state folder), and on
each READY it reads what came after it through the REST history, oldest first, and
admits those messages like live ones. The ids admitted are remembered, so a message
that also arrives live is taken once.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import anyio
import discord
import structlog

log = structlog.get_logger(__name__)

FILE = "discord-marks.json"
CATCH_UP_LIMIT = 100
"""At most this many missed messages per channel are read back."""


class Marks:
    def __init__(self, state_dir: Path) -> None:
        self._path = state_dir / FILE
        self._last: dict[int, int] = {}
        self._lock = anyio.Lock()

    def load(self) -> None:
        try:
            raw = json.loads(self._path.read_text("utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            log.warning("discord_marks_unreadable", error=type(exc).__name__)
            return
        if isinstance(raw, dict):
            self._last = {
                int(k): int(v) for k, v in raw.items() if str(k).isdigit() and isinstance(v, int)
            }

    def channels(self) -> dict[int, int]:
        return dict(self._last)

    async def note(self, channel_id: int, message_id: int) -> None:
        if self._last.get(channel_id, 0) >= message_id:
            return
        self._last[channel_id] = message_id
        text = json.dumps({str(k): v for k, v in self._last.items()})
        async with self._lock:
            try:
                await anyio.Path(self._path).write_text(text, "utf-8")
            except OSError as exc:
                log.warning("discord_marks_not_saved", error=type(exc).__name__)


async def catch_up(
    client: discord.Client, marks: Marks, take: Callable[[discord.Message], Awaitable[None]]
) -> None:
    for channel_id, last in marks.channels().items():
        try:
            channel = client.get_channel(channel_id) or await client.fetch_channel(channel_id)
            if not isinstance(channel, discord.abc.Messageable):
                continue
            missed = [
                message
                async for message in channel.history(
                    limit=CATCH_UP_LIMIT, after=discord.Object(last), oldest_first=True
                )
            ]
        except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
            log.warning("discord_catch_up_failed", channel=channel_id, error=type(exc).__name__)
            continue
        if missed:
            log.info("discord_caught_up", channel=channel_id, messages=len(missed))
        for message in missed:
            await take(message)
