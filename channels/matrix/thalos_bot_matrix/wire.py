"""Matrix's wire for the kit's delivery engine: its verbs over the client-server API,
what their failures mean, and its limits.

Every new message is ``PUT …/send/m.room.message/{txnId}`` with the engine's key as the
transaction id, and the homeserver answers a repeat with the event the first try stored:
a send in doubt, even one a restarted daemon resumes from its outbox row, is simply made
again (``resend="repeat"``). An edit is an ``m.replace`` under a fresh transaction id
(made twice, it shows the same). ``M_LIMIT_EXCEEDED`` limits the account, not a room:
its ``retry_after_ms`` holds every room. In an encrypted room every event is sealed
(:mod:`.crypto`) and a tool's image is uploaded encrypted (:mod:`.attachments`).

The Markdown as written is an event's ``body``, its HTML beside it (:mod:`.render`), so
:meth:`MatrixWire.render` hands the engine the Markdown itself. A plain message (a
notice, or a part too large with its HTML) goes without HTML.

On replicas (:mod:`thalos_bot.service.anywhere`) everything but encryption works from
any of them: transaction ids are random (two replicas sharing the token never reuse one)
and the 429s are the account's. How the send-only side seals an event for an encrypted
room, or refuses to, is :mod:`.sealing`'s.
"""

from __future__ import annotations

from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.channels.delivery.wire import Outgoing, WireLimits, with_controls_line
from thalos_bot.domain.events import ToolImage, VoiceClip
from thalos_bot_matrix.attachments import uploaded
from thalos_bot_matrix.client import JSON, MatrixClient, MatrixError, UnreachableError, new_txn
from thalos_bot_matrix.events import VOICE_FLAG
from thalos_bot_matrix.render import MESSAGE_UNITS, TooLargeError, fitted
from thalos_bot_matrix.render import edit as edit_content
from thalos_bot_matrix.render import message as message_content
from thalos_bot_matrix.sealing import Seal, Sealed, SealedElsewhereError

Choices = str
"""A question's "controls": the line saying how to answer (Matrix has no buttons)."""

GLOBAL_PER_SECOND = 25.0
"""A ceiling on the account's calls, not the homeserver's limit: that one it says with
429s, and each is obeyed for every room."""
TYPING_MS = 7_000
"""How long one typing notice lasts (the engine renews it every 5 s while an answer is
written; the homeserver drops it this long after the last)."""


class MatrixWire:
    name = "matrix"

    def __init__(
        self,
        client: MatrixClient,
        me: str,
        *,
        room_min_interval: float,
        seal: Seal | None = None,
        sealed: Sealed | None = None,
    ) -> None:
        self._client = client
        self._me = me
        self._seal = seal
        self._sealed = sealed
        """Whether a room is encrypted (with ``seal``, its files are encrypted too;
        None: no room is)."""
        self._uploads: dict[str, JSON] = {}
        """An image's event by its key, once uploaded: a send made again names the same
        upload (and key) instead of uploading it anew."""
        self.limits = WireLimits(
            message_units=MESSAGE_UNITS,
            caption_units=MESSAGE_UNITS,
            chat_min_interval=room_min_interval,
            global_rate=GLOBAL_PER_SECOND,
            resend="repeat",
        )

    def render(self, source: str) -> str:
        """The Markdown itself: it is the body, and its HTML is made beside it."""
        return source

    def classify(self, exc: Exception) -> Classified | None:
        if isinstance(exc, UnreachableError):
            kind = Failure.MAYBE_SENT if exc.maybe_sent else Failure.NOT_SENT
            return Classified(kind, exc.reason)
        if isinstance(exc, TooLargeError):
            return Classified(Failure.REJECTED, "larger than one event")
        if isinstance(exc, SealedElsewhereError):
            return Classified(Failure.REJECTED, "an encrypted room, whose keys are elsewhere")
        if not isinstance(exc, MatrixError):
            return None
        reason = str(exc)
        if exc.rate_limited:
            wait = exc.retry_after or 0.0
            return Classified(Failure.RETRY_AFTER, reason, retry_after=wait, everywhere=True)
        if exc.status == 401:  # M_UNKNOWN_TOKEN: the token was revoked
            return Classified(Failure.UNAUTHORIZED, reason)
        if exc.status == 413 or exc.errcode == "M_TOO_LARGE":
            return Classified(Failure.BAD_ENTITIES, reason)  # made again without its HTML
        return Classified(Failure.REJECTED, reason)

    async def send(self, chat: str, message: Outgoing[Choices]) -> str:
        text = with_controls_line(message)

        def make(html: bool) -> JSON:
            content = message_content(text, notice=message.notice, html=html)
            if message.reply_to is not None:
                content["m.relates_to"] = {"m.in_reply_to": {"event_id": message.reply_to}}
            return content

        return await self._put(chat, fitted(make, html=not message.plain), message.key)

    async def edit(self, chat: str, ref: str, message: Outgoing[Choices]) -> None:
        text = with_controls_line(message)
        content = fitted(
            lambda html: edit_content(ref, text, notice=message.notice, html=html),
            html=not message.plain,
        )
        await self._put(chat, content, new_txn())

    async def upload(
        self, chat: str, image: ToolImage | VoiceClip, caption: Outgoing[Choices]
    ) -> str:
        key = caption.key
        content = self._uploads.get(key)
        if content is None:
            content = {
                "msgtype": "m.image",
                "body": caption.text,
                "info": {"mimetype": image.media_type, "size": len(image.data)},
            }
            if isinstance(image, VoiceClip):
                content |= voice_fields(image)
            name = image.name
            if self._seal is not None and self._sealed is not None and await self._sealed(chat):
                content["file"] = await uploaded(self._client, image.data, name)
            else:
                content["url"] = await self._client.upload(image.data, image.media_type, name)
            self._uploads[key] = content
        event_id = await self._put(chat, content, key)
        self._uploads.pop(key, None)
        return event_id

    async def typing(self, chat: str, thread: str | None) -> None:
        await self._client.typing(chat, self._me, timeout_ms=TYPING_MS)

    async def _put(self, room: str, content: JSON, txn: str) -> str:
        kind = "m.room.message"
        if self._seal is not None:
            kind, content = await self._seal(room, kind, content)
        return await self._client.send(room, kind, txn, content)


def room_of(conversation_id: str) -> str:
    """A conversation is a room: its id is the room id (``!abc:example.org``)."""
    if not conversation_id.startswith("!"):
        raise ValueError(conversation_id)
    return conversation_id


WAVEFORM_TOP = 1024
"""The loudest bar of a Matrix voice message's waveform."""


def voice_fields(clip: VoiceClip) -> dict[str, object]:
    """An ``m.audio`` that Element shows as a voice message (MSC3245: the voice flag and
    MSC1767's audio block with the duration in milliseconds and the waveform)."""
    ms = None if clip.duration is None else round(clip.duration * 1000)
    info: dict[str, object] = {"mimetype": clip.media_type, "size": len(clip.data)}
    fields: dict[str, object] = {"msgtype": "m.audio", "info": info}
    if ms is not None:
        info["duration"] = ms
        fields["org.matrix.msc1767.audio"] = {"duration": ms}
        if clip.waveform:
            # MSC3246 draws it from 0 to 1024.
            waveform = [round(level * WAVEFORM_TOP / 255) for level in clip.waveform]
            fields["org.matrix.msc1767.audio"] = {"duration": ms, "waveform": waveform}
    if clip.voice:
        fields[VOICE_FLAG] = {}
    return fields
