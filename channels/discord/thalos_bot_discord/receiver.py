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
conversation's order); a READY starts a catch-up. A slash command comes here too, as
its text, and is admitted by where it was run and who ran it.

The commands are Discord application (slash) commands, registered globally at start
(one bulk overwrite, so a renamed command does not linger) by
:meth:`Receiver.serve_commands`. Running one is answered at once (Discord wants an
answer within 3 s) with the command as typed, and the command goes to the pump as the
text ``/<name> [arg]``, exactly as a typed one would, so its reply follows as an
ordinary message.

Files sent with a message are, for the kit's intake, each attachment a
:class:`~thalos_bot.channels.intake.files.RemoteFile` (kept in the media store as
``discord:<attachment id>``), read from Discord's CDN through discord.py's client (as
``Attachment.read`` does) when the intake asks for it (:class:`DiscordFiles`).

Catching up after a restart or a new gateway session: Discord does not replay to a new
session what was said while the bot was away (only a RESUME replays, and only within
the session). So the channel keeps, per served channel, the id of the last message it
admitted (in the host's database, through the kit's
:class:`~thalos_bot.channels.delivery.markbook.MarkBook`, so a replica taking the
connection over knows them too), and on each READY the kit's catch-up
(:mod:`thalos_bot.channels.intake.catch_up`) reads what came after it through the REST
history, oldest first, and admits those messages like live ones. The ids admitted are
remembered, so a message that also arrives live is taken once.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import discord
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream
from discord import app_commands

from thalos_bot.channels.admission.guard import UpdateGuard
from thalos_bot.channels.admission.mentions import strip_spans
from thalos_bot.channels.admission.seen import Seen
from thalos_bot.channels.delivery.markbook import MarkBook
from thalos_bot.channels.intake.catch_up import catch_up
from thalos_bot.channels.intake.files import FetchLimit, Intake, RemoteFile
from thalos_bot.channels.notices import COMMAND_ARGUMENTS, COMMANDS
from thalos_bot.channels.people import Seats
from thalos_bot.channels.ports import InboundMessage, Quoted
from thalos_bot.domain.ids import ChannelId
from thalos_bot_discord.addressing import Place
from thalos_bot_discord.client import Event
from thalos_bot_discord.config import DiscordConfig
from thalos_bot_discord.wire import DiscordWire

log = structlog.get_logger(__name__)

CHANNEL = ChannelId("discord")
GUARD = UpdateGuard("discord")
NOT_SERVED = "I only answer the people and channels I'm set up for."
THREAD_NAME_CHARS = 60
NEW_THREAD = 0
"""The thread id of a place whose thread is yet to be opened on the message."""
FILE_LIMIT = FetchLimit(25 * 1024 * 1024, "Discord")
"""The largest attachment the intake fetches (a free account uploads up to 10 MiB; Nitro
and boosted servers allow more, which the model could not take whole anyway)."""
LEGACY_FILE = "discord-marks.json"
"""Where versions before the host's mark book kept the marks."""
CATCH_UP_LIMIT = 100
"""At most this many missed messages per channel are read back."""


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
    replied = _replied_to(message)
    if not any(user.id == bot_id for user in message.mentions) and (
        replied is None or replied.author.id != bot_id
    ):
        return None  # neither mentioned nor replied to
    return Place("th", NEW_THREAD, place.id) if config.threads else place


def remote_files(message: discord.Message) -> tuple[RemoteFile, ...]:
    """The message's attachments (discord.py keeps their fields as sent: one without a
    text URL and name is skipped, the rest is the kit's reading of a claim)."""
    files = []
    for item in message.attachments:
        url: object = item.url
        name: object = item.filename
        if not isinstance(url, str) or not isinstance(name, str):
            log.warning("discord_attachment_unreadable", attachment=item.id)
            continue
        origin, voice = f"discord:{item.id}", item.is_voice_message()
        files.append(
            RemoteFile.claimed(
                url, origin, name, size=item.size, mime=item.content_type, voice=voice
            )
        )
    return tuple(files)


class DiscordFiles:
    """The kit's file source: an attachment's bytes from Discord's CDN."""

    def __init__(self, client: discord.Client) -> None:
        self._client = client

    async def fetch(self, file: RemoteFile) -> bytes:
        FILE_LIMIT.claim(file)
        try:
            return await self._client.http.get_from_cdn(file.ref)
        except (discord.HTTPException, OSError) as exc:
            log.warning("discord_file_download_failed", error=type(exc).__name__)
            raise FILE_LIMIT.refusal(too_big=False) from None


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


def _replied_to(message: discord.Message) -> discord.Message | None:
    resolved = message.reference.resolved if message.reference is not None else None
    return resolved if isinstance(resolved, discord.Message) else None


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
                        classify = self.wire.classify
                        await catch_up(
                            "discord", self.marks, self._missed, self.on_message, classify
                        )
                    else:
                        await self.on_message(event)
                except Exception as exc:  # noqa: BLE001 - one event only, see the guard
                    GUARD.failed(exc, conversation=None, notify=None)

    async def _missed(self, chat: str, last: int) -> list[discord.Message]:
        """The catch-up's read: what came after ``last`` in the channel ``chat``."""
        client = self.client
        channel = chat.isdigit() and (
            client.get_channel(int(chat)) or await client.fetch_channel(int(chat))
        )
        if not isinstance(channel, discord.abc.Messageable):
            return []
        after = discord.Object(last)
        history = channel.history(limit=CATCH_UP_LIMIT, after=after, oldest_first=True)
        return [message async for message in history]

    async def serve_commands(self, *, register: bool) -> None:
        """The commands, run through :meth:`_command`; with ``register``, registered too
        (the application's id is known once the client is logged in)."""
        tree: app_commands.CommandTree[discord.Client] = app_commands.CommandTree(self.client)
        for name, summary in COMMANDS:
            if name in COMMAND_ARGUMENTS:
                option, about = COMMAND_ARGUMENTS[name]

                async def with_value(
                    interaction: discord.Interaction, value: str | None = None
                ) -> None:
                    await self._command(interaction, value)

                described = app_commands.describe(value=about)(with_value)
                callback = app_commands.rename(value=option)(described)
            else:

                async def plain(interaction: discord.Interaction) -> None:
                    await self._command(interaction)

                callback = plain  # type: ignore[assignment] # one signature per kind
            tree.add_command(
                app_commands.Command(name=name, description=summary[:100], callback=callback)
            )
        if not register:
            return
        try:
            synced = await tree.sync()
        except discord.HTTPException as exc:
            log.warning("discord_commands_refused", status=exc.status, code=exc.code)
            return
        log.info("discord_commands_registered", commands=[c.name for c in synced])

    async def _command(self, interaction: discord.Interaction, value: str | None = None) -> None:
        """Hand a slash command over as its text, and answer it: with the command as
        typed when taken, privately when not served, and not at all for a replay (an
        interaction already taken), since Discord refuses a second answer (40060)."""
        name = interaction.command.name if interaction.command else ""
        text = f"/{name} {value}".strip() if value else f"/{name}"
        if not self.seen.first_time(interaction.id):
            return
        place = place_of(self.config, interaction.channel, interaction.user.id)
        if place is None:
            log.info("discord_command_refused", user=interaction.user.id)
            await interaction.response.send_message(NOT_SERVED, ephemeral=True)
            return
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
        await interaction.response.send_message(f"`{text}`")

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
