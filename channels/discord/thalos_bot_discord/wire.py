"""Discord's wire for the kit's delivery engine: its verbs through discord.py, what their
failures mean, and its limits.

Every post carries the engine's key as its ``nonce``, which discord.py sends with
``enforce_nonce``: a post made again after a failure in transit (the connection dropped,
a timeout, a 5xx), even by a restarted daemon resuming a final from its outbox row, gets
back the message the first try created instead of a second one. So a send in doubt is
simply made again (:attr:`~thalos_bot.channels.delivery.wire.WireLimits.resend`
``"repeat"``). 429s are discord.py's: it waits each one's ``retry_after`` and tries
again. A refusal (4xx) is final and logged by its code; the person never sees Discord's
text.

A conversation's chat is its :class:`~thalos_bot_discord.addressing.Place`; a direct
message's channel is opened on its first write and kept (a refusal to open it is
classified as a send's would be).
"""

from __future__ import annotations

import base64
import io
from typing import Any

import aiohttp
import discord
from discord.http import handle_message_parameters

from thalos_bot.channels.delivery.channel import WireAdapter
from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.channels.delivery.wire import Outgoing, WireLimits, file_name
from thalos_bot.channels.pacing.gate import GlobalPacer
from thalos_bot.domain.events import ToolImage, VoiceClip
from thalos_bot_discord.addressing import Place
from thalos_bot_discord.config import DiscordConfig
from thalos_bot_discord.markdown import to_discord

Controls = discord.ui.View
"""A question's buttons."""

LIMIT = 2000
"""Discord's limit on a message's ``content``, in characters."""
REFUSALS = {
    10008: Failure.GONE,  # Unknown Message
    50005: Failure.NOT_EDITABLE,  # Cannot edit a message authored by another user
    50035: Failure.BAD_ENTITIES,  # Invalid Form Body
}
GLOBAL_PER_SECOND = 40.0
"""Discord allows a bot 50 requests a second in all; a 429 past that closes every route
to the bot until it runs out. The channel's own writes keep to 40, leaving room for the
requests discord.py makes by itself (login, command registration, fetches), so a burst
across many channels (a notice to everyone, many answers ending at once) is paced, not
refused."""


class DiscordWire:
    name = "discord"

    def __init__(self, client: discord.Client, config: DiscordConfig) -> None:
        self._client = client
        self.pacer = GlobalPacer(GLOBAL_PER_SECOND)
        """The global pace, shared with the engine (opening a DM counts too)."""
        self.dm_channels: dict[int, int] = {}
        """Each user's DM channel, as seen (the send side opens no DM it knows)."""
        self.limits = WireLimits(
            message_units=LIMIT,
            caption_units=LIMIT,
            chat_min_interval=config.edit_window / config.edits_per_window,
            global_rate=GLOBAL_PER_SECOND,
            resend="repeat",
            chat_burst=config.edits_per_window,
            typing_interval=8.0,
        )

    def channel_of(self, place: Place) -> int | None:
        """The Discord channel ``place`` writes to (None: a DM not opened yet)."""
        return self.dm_channels.get(place.id) if place.kind == "dm" else place.id

    def tell(
        self, adapter: WireAdapter[Place, Any], channel_id: int | None, seconds: float
    ) -> None:
        """A 429 discord.py met on a Discord channel (and waits out itself): told, for the
        other replicas, as the chat the adapter writes there (a global one: every chat)."""
        if channel_id is None:
            adapter.told(None, seconds)
            return
        for place in adapter.known_chats():
            if self.channel_of(place) == channel_id:
                adapter.told(place, seconds)
                return

    def render(self, source: str) -> str:
        """Discord's dialect; "" (the part goes plain) when it would pass the limit (a
        table laid out as a code block can grow)."""
        rendered = to_discord(source)
        return rendered if len(rendered) <= LIMIT else ""

    def classify(self, exc: Exception) -> Classified | None:
        if isinstance(exc, discord.DiscordServerError):
            return Classified(Failure.MAYBE_SENT, f"server error {exc.status}")
        if isinstance(exc, discord.HTTPException):
            reason = f"{exc.status} code {exc.code}"
            if exc.status == 429:
                return Classified(Failure.RETRY_AFTER, reason, retry_after=1.0)
            if exc.status == 401:
                return Classified(Failure.UNAUTHORIZED, reason)
            return Classified(REFUSALS.get(exc.code, Failure.REJECTED), reason)
        if isinstance(exc, aiohttp.ClientConnectorError):
            return Classified(Failure.NOT_SENT, type(exc).__name__)
        if isinstance(exc, aiohttp.ClientError | OSError):  # TimeoutError is an OSError
            return Classified(Failure.MAYBE_SENT, type(exc).__name__)
        return None

    async def send(self, chat: Place, message: Outgoing[Controls]) -> str:
        channel = await self._channel(chat)
        view = message.controls or discord.utils.MISSING  # None is not in the overloads
        sent = await channel.send(message.text or None, nonce=message.key, view=view)
        return str(sent.id)

    async def edit(self, chat: Place, ref: str, message: Outgoing[Controls]) -> None:
        channel = await self._channel(chat)
        await channel.get_partial_message(int(ref)).edit(
            content=message.text, view=message.controls
        )

    async def upload(
        self, chat: Place, image: ToolImage | VoiceClip, caption: Outgoing[Controls]
    ) -> str:
        channel = await self._channel(chat)
        if isinstance(image, VoiceClip) and image.voice and image.duration:
            # A voice message: its flag, and one attachment with its length and waveform
            # (no text: Discord refuses a voice message with content; the answer's text
            # went before it).
            voice = VoiceFile(io.BytesIO(image.data), image.name, image.duration, image.waveform)
            flags = discord.MessageFlags(voice=True)
            with handle_message_parameters(file=voice, flags=flags, nonce=caption.key) as params:
                posted = await self._client.http.send_message(channel.id, params=params)
            return str(posted["id"])
        file = discord.File(io.BytesIO(image.data), filename=file_name(image))
        sent = await channel.send(caption.text or None, nonce=caption.key, file=file)
        return str(sent.id)

    async def typing(self, chat: Place, thread: str | None) -> None:
        await (await self._channel(chat)).typing()

    async def _channel(self, place: Place) -> discord.PartialMessageable:
        known = self.channel_of(place)
        if known is None:
            # Opening the DM is a request of its own, and the engine's turn for the write
            # goes by meanwhile: each takes a turn of the global pace.
            await self.pacer.acquire()
            dm = await self._client.create_dm(discord.Object(place.id))
            known = self.dm_channels[place.id] = dm.id
            await self.pacer.acquire()
        return self._client.get_partial_messageable(known)


class VoiceFile(discord.File):
    """An audio file as a voice message's attachment: with its duration and waveform (at
    most 256 bytes, one loudness byte a bar; flat when the clip came without one)."""

    def __init__(
        self, fp: io.BytesIO, filename: str, seconds: float, waveform: tuple[int, ...] = ()
    ) -> None:
        super().__init__(fp, filename=filename)
        self.seconds = seconds
        self.waveform = bytes(waveform[:256]) or bytes([128]) * 64

    def to_dict(self, index: int) -> dict[str, Any]:
        drawn = base64.b64encode(self.waveform).decode()
        return {**super().to_dict(index), "duration_secs": self.seconds, "waveform": drawn}
