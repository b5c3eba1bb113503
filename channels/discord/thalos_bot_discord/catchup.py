"""Catching up after a restart or a new gateway session.

Discord does not replay to a new session what was said while the bot was away (only a
RESUME replays, and only within the session). So the channel keeps, per served channel,
the id of the last message it admitted (in the host's database, through the kit's
:class:`~thalos_bot.channels.delivery.markbook.MarkBook`, so a replica taking the
connection over knows them too), and on
each READY the kit's catch-up (:mod:`thalos_bot.channels.intake.catch_up`) reads what came
after it through the REST history, oldest first, and admits those messages like live
ones. The ids admitted are remembered, so a message that also arrives live is taken once.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import discord
import structlog

from thalos_bot.channels.delivery.markbook import MarkBook
from thalos_bot.channels.intake.catch_up import catch_up as kit_catch_up
from thalos_bot_discord.wire import DiscordWire

log = structlog.get_logger(__name__)

LEGACY_FILE = "discord-marks.json"
"""Where versions before the host's mark book kept the marks."""
CATCH_UP_LIMIT = 100
"""At most this many missed messages per channel are read back."""


def imported(state_dir: Path, book: MarkBook) -> None:
    """The marks an older version kept in a file of the state folder, noted into
    ``book`` (the host's database) once; the file is then removed."""
    path = state_dir / LEGACY_FILE
    try:
        raw = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return
    except (OSError, ValueError) as exc:
        log.warning("discord_marks_unreadable", error=type(exc).__name__)
        return
    if isinstance(raw, dict):
        for key, mark in raw.items():
            if str(key).isdigit() and isinstance(mark, int):
                book.note(str(key), mark)
    path.unlink(missing_ok=True)


async def catch_up(
    client: discord.Client,
    wire: DiscordWire,
    marks: MarkBook,
    take: Callable[[discord.Message], Awaitable[None]],
) -> None:
    async def read(chat: str, last: int) -> list[discord.Message]:
        channel = chat.isdigit() and (
            client.get_channel(int(chat)) or await client.fetch_channel(int(chat))
        )
        if not isinstance(channel, discord.abc.Messageable):
            return []
        after = discord.Object(last)
        history = channel.history(limit=CATCH_UP_LIMIT, after=after, oldest_first=True)
        return [message async for message in history]

    await kit_catch_up("discord", marks, read, take, wire.classify)
