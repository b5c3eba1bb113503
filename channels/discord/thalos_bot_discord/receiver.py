"""From gateway events to the pump's inbound messages.

Direct messages from allowed users are conversations (``dm:<user>``). In a server the
bot answers only in ``guild_channels``, only allowed users, and only when it is mentioned
or replied to; with ``threads = true`` each such message gets a thread of its own, and
later messages there need no mention (``th:<channel>:<thread>``), else the channel is
the conversation (``ch:<channel>``). Everyone and everything else gets nothing. Each
message id is admitted once: the gateway may deliver an event again (a RESUME replays),
and a replay must not start a second turn.

The :class:`Receiver` reads the events the client passed on (in order, inside the
channel's task group): an admitted message gets its thread, if it is to have one, and
goes to the pump through the kit's intake (its files fetched and checked first, in the
conversation's order); a READY starts a catch-up (:mod:`.catchup`). A slash command
comes here too, as its text, and is admitted by where it was run and who ran it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

import discord
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream

from thalos_bot.channels.admission.guard import UpdateGuard
from thalos_bot.channels.admission.mentions import strip_spans
from thalos_bot.channels.admission.seen import Seen
from thalos_bot.channels.delivery.markbook import MarkBook
from thalos_bot.channels.intake.files import Intake
from thalos_bot.channels.people import Seats
from thalos_bot.channels.ports import InboundMessage, Quoted
from thalos_bot.domain.ids import ChannelId
from thalos_bot_discord.addressing import Place
from thalos_bot_discord.catchup import catch_up
from thalos_bot_discord.client import Event
from thalos_bot_discord.commands import DUPLICATE
from thalos_bot_discord.config import DiscordConfig
from thalos_bot_discord.intake import remote_files
from thalos_bot_discord.wire import DiscordWire

log = structlog.get_logger(__name__)

CHANNEL = ChannelId("discord")
GUARD = UpdateGuard("discord")
NOT_SERVED = "I only answer the people and channels I'm set up for."
THREAD_NAME_CHARS = 60
NEW_THREAD = 0
"""The thread id of a place whose thread is yet to be opened on the message."""


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


def admit(config: DiscordConfig, bot_id: int, message: discord.Message) -> Place | None:
    """Where ``message`` belongs (None: it is not for the bot)."""
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
    place = place_of(config, message.channel, author.id)
    if place is None or place.kind == "dm":
        return place
    if place.kind == "th":  # a thread of the bot's own needs no mention
        return place if getattr(message.channel, "owner_id", None) == bot_id else None
    if not _addressed(message, bot_id):
        return None
    return Place("th", NEW_THREAD, place.id) if config.threads else place


def _replied_to(message: discord.Message) -> discord.Message | None:
    resolved = message.reference.resolved if message.reference is not None else None
    return resolved if isinstance(resolved, discord.Message) else None


def _addressed(message: discord.Message, bot_id: int) -> bool:
    if any(user.id == bot_id for user in message.mentions):
        return True
    replied = _replied_to(message)
    return replied is not None and replied.author.id == bot_id


def _quoted(message: discord.Message, bot_id: int, max_chars: int) -> Quoted | None:
    replied = _replied_to(message)
    if replied is None:
        return None
    content: object = replied.content  # not a string when discord.py could not read it
    if not isinstance(content, str) or getattr(replied, "author", None) is None:
        return None
    bots, senders = replied.author.id == bot_id, replied.author.id == message.author.id
    return Quoted.capped(content, max_chars, bots=bots, senders=senders)


@dataclass
class Receiver:
    client: discord.Client
    bot_id: int
    config: DiscordConfig
    wire: DiscordWire
    marks: MarkBook
    seats: Seats
    intake: Intake
    seen: Seen = field(default_factory=Seen)

    async def run(self, events: MemoryObjectReceiveStream[Event]) -> None:
        async with events:
            async for event in events:
                try:
                    if isinstance(event, str):
                        await catch_up(self.client, self.wire, self.marks, self.on_message)
                    else:
                        await self.on_message(event)
                except Exception as exc:  # noqa: BLE001 - one event only, see the guard
                    GUARD.failed(exc, conversation=None, notify=None)

    def run_command(self, interaction: discord.Interaction, text: str) -> str | None:
        """Hand a slash command over as its text; None when taken, else what to tell the
        person (privately), or :data:`DUPLICATE` for a replay."""
        if not self.seen.first_time(interaction.id):
            return DUPLICATE
        place = place_of(self.config, interaction.channel, interaction.user.id)
        if place is None:
            log.info("discord_command_refused", user=interaction.user.id)
            return NOT_SERVED
        if isinstance(interaction.channel, discord.DMChannel):
            self.wire.dm_channels[interaction.user.id] = interaction.channel.id
        self.intake.pass_text(
            InboundMessage(
                CHANNEL,
                place.conversation,
                self.seats.sender(interaction.user.id, interaction.user.display_name),
                text,
                datetime.now(UTC),
                message_ref=str(interaction.id),
            )
        )
        return None

    async def on_message(self, message: discord.Message) -> None:
        if not self.seen.first_time(message.id):
            log.info("discord_event_replayed", message=message.id)
            return
        place = admit(self.config, self.bot_id, message)
        if place is None:
            return
        self.marks.note_when_taken(str(message.id), str(message.channel.id), message.id)
        spans = [m.span() for m in re.finditer(rf"<@!?{self.bot_id}>", message.content)]
        text = strip_spans(message.content, spans)  # without its mentions of the bot
        if place.id == NEW_THREAD:
            name = text.strip().split("\n", 1)[0] or "conversation"
            try:
                thread = await message.create_thread(name=name[:THREAD_NAME_CHARS])
            except discord.HTTPException as exc:
                log.warning("discord_thread_refused", status=exc.status, code=exc.code)
                return
            place = Place("th", thread.id, place.parent)
        elif place.kind == "dm":
            self.wire.dm_channels[place.id] = message.channel.id
        inbound = InboundMessage(
            CHANNEL,
            place.conversation,
            self.seats.sender(message.author.id, message.author.display_name),
            text,
            message.created_at.astimezone(UTC),
            reply_to=_quoted(message, self.bot_id, self.config.quote_max_chars),
            message_ref=str(message.id),
        )
        self.intake.receive(inbound, remote_files(message))
