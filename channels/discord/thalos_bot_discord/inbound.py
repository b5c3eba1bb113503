"""Which Discord messages become conversation turns, and as what.

Direct messages from allowed users are conversations (``dm:<user>``). In a server the
bot answers only in ``guild_channels``, only allowed users, and only when it is mentioned
or replied to; with ``threads = true`` each such message gets a thread of its own, and
later messages there need no mention (``th:<channel>:<thread>``), else the channel is
the conversation (``ch:<channel>``). Everyone and everything else gets nothing. Each
message id is admitted once: the gateway may deliver an event again (a RESUME replays),
and a replay must not start a second turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

import discord
import structlog

from thalos_bot.channels.admission.mentions import strip_spans
from thalos_bot.channels.ports import Quoted
from thalos_bot_discord.addressing import Place
from thalos_bot_discord.config import DiscordConfig

log = structlog.get_logger(__name__)

THREAD_NAME_CHARS = 60


@dataclass(frozen=True, slots=True)
class Admitted:
    place: Place
    text: str
    reply_to: Quoted | None
    received_at: datetime
    needs_thread: bool = False


def place_of(config: DiscordConfig, channel: object, user_id: int) -> Place | None:
    """Where a command run in ``channel`` by ``user_id`` belongs (None: not served)."""
    if user_id not in config.allowed_users:
        return None
    if isinstance(channel, discord.DMChannel):
        return Place("dm", user_id)
    if isinstance(channel, discord.Thread) and channel.parent_id in config.guild_channels:
        return Place("th", channel.id, channel.parent_id)
    channel_id = getattr(channel, "id", None)
    if isinstance(channel_id, int) and channel_id in config.guild_channels:
        return Place("ch", channel_id)
    return None


def admit(config: DiscordConfig, bot_id: int, message: discord.Message) -> Admitted | None:
    author = getattr(message, "author", None)
    if author is None or not isinstance(message.content, str):
        # discord.py leaves out a field it could not read, and keeps others as sent
        log.warning("discord_message_unreadable", message=message.id)
        return None
    if author.bot or author.id == bot_id:
        return None
    if author.id not in config.allowed_users:
        log.info("discord_message_from_stranger", user=author.id, dm=message.guild is None)
        return None
    channel = message.channel
    spans = [m.span() for m in re.finditer(rf"<@!?{bot_id}>", message.content)]
    text = strip_spans(message.content, spans)  # without its mentions of the bot
    quoted = _quoted(message, bot_id, config.quote_max_chars)
    when = message.created_at.astimezone(UTC)
    if message.guild is None:
        return Admitted(Place("dm", author.id), text, quoted, when)
    if isinstance(channel, discord.Thread):
        if channel.parent_id in config.guild_channels and channel.owner_id == bot_id:
            return Admitted(Place("th", channel.id, channel.parent_id), text, quoted, when)
        return None
    if channel.id not in config.guild_channels or not _addressed(message, bot_id):
        return None
    if config.threads:
        return Admitted(Place("th", 0, channel.id), text, quoted, when, needs_thread=True)
    return Admitted(Place("ch", channel.id), text, quoted, when)


def _addressed(message: discord.Message, bot_id: int) -> bool:
    if any(user.id == bot_id for user in message.mentions):
        return True
    resolved = message.reference.resolved if message.reference is not None else None
    return isinstance(resolved, discord.Message) and resolved.author.id == bot_id


def _quoted(message: discord.Message, bot_id: int, max_chars: int) -> Quoted | None:
    resolved = message.reference.resolved if message.reference is not None else None
    if not isinstance(resolved, discord.Message):
        return None
    content: object = resolved.content  # not a string when discord.py could not read it
    if not isinstance(content, str) or getattr(resolved, "author", None) is None:
        return None
    bots, senders = resolved.author.id == bot_id, resolved.author.id == message.author.id
    return Quoted.capped(resolved.content, max_chars, bots=bots, senders=senders)


def thread_name(text: str) -> str:
    line = text.strip().split("\n", 1)[0] or "conversation"
    return line[:THREAD_NAME_CHARS]
