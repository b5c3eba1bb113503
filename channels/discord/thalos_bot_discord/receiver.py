"""From gateway events to the pump's inbound messages.

The :class:`Receiver` reads the events the client passed on (in order, inside the
channel's task group): a message goes through admission (:mod:`.inbound`), once per id,
gets its thread (``threads = true``), and goes to the pump through the kit's intake
(its files fetched and checked first, in the conversation's order); a READY starts a
catch-up (:mod:`.catchup`). A slash command comes here too, as its text, and is
admitted by where it was run and who ran it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import discord
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream

from thalos_bot.channels.admission.seen import Seen
from thalos_bot.channels.delivery.markbook import MarkBook
from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.intake.files import Intake
from thalos_bot.channels.people import Seats
from thalos_bot.channels.ports import InboundMessage
from thalos_bot.domain.ids import ChannelId
from thalos_bot_discord.addressing import Place
from thalos_bot_discord.catchup import catch_up
from thalos_bot_discord.commands import DUPLICATE
from thalos_bot_discord.config import DiscordConfig
from thalos_bot_discord.inbound import Admitted, admit, place_of, thread_name
from thalos_bot_discord.intake import remote_files
from thalos_bot_discord.wire import DiscordWire

log = structlog.get_logger(__name__)

NOT_SERVED = "I only answer the people and channels I'm set up for."
Event = discord.Message | str
"""What the client passes on: a message, or :data:`READY` for a new gateway session."""
READY = "ready"


@dataclass
class Receiver:
    client: discord.Client
    config: DiscordConfig
    channel_id: ChannelId
    wire: DiscordWire
    """Told each DM's channel as it is seen (the send side opens no DM it knows)."""
    inlet: Inlet
    marks: MarkBook
    seen: Seen
    seats: Seats
    intake: Intake

    @property
    def bot_id(self) -> int:
        user = self.client.user
        assert user is not None, "admission starts after login"
        return user.id

    async def run(self, events: MemoryObjectReceiveStream[Event]) -> None:
        async with events:
            async for event in events:
                try:
                    if isinstance(event, str):
                        await catch_up(self.client, self.marks, self.on_message)
                    else:
                        await self.on_message(event)
                except Exception:
                    log.exception("discord_event_failed")

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
            self.wire.knows_dm(interaction.user.id, interaction.channel.id)
        self.inlet.hand_over(
            InboundMessage(
                self.channel_id,
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
        admitted = admit(self.config, self.bot_id, message)
        if admitted is None:
            return
        self.marks.note(message.channel.id, message.id)
        await self._take(admitted, message)

    async def _take(self, admitted: Admitted, message: discord.Message) -> None:
        place = admitted.place
        if admitted.needs_thread:
            try:
                thread = await message.create_thread(name=thread_name(admitted.text))
            except discord.HTTPException as exc:
                log.warning("discord_thread_refused", status=exc.status, code=exc.code)
                return
            place = Place("th", thread.id, place.parent)
        if place.kind == "dm":
            self.wire.knows_dm(place.id, message.channel.id)
        base = InboundMessage(
            self.channel_id,
            place.conversation,
            self.seats.sender(message.author.id, message.author.display_name),
            admitted.text,
            admitted.received_at,
            reply_to=admitted.reply_to,
            message_ref=str(message.id),
        )
        self.intake.receive(base, remote_files(message))
