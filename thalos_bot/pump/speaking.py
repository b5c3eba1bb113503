"""Spoken answers: whether a turn's answer is read aloud, and the clips it becomes.

By default (``[speech] mode = "auto"``) an answer is spoken when the person's message
was a voice note, and not otherwise; ``/voice on|off|auto`` changes that for one
conversation and is kept. The answer's text is always sent first; the clips follow it
(:class:`~thalos_bot.domain.events.VoiceClip`, the platform's voice message). What is
read is the prose (:func:`~thalos_bot.speech.spoken.spoken_text`: code, tables and links
are left out), in clips of at most ``max_clip_chars``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import structlog

from thalos_bot.channels.ports import InboundMessage, Notice
from thalos_bot.config.speech import SpeechSettings
from thalos_bot.domain.events import VoiceClip
from thalos_bot.domain.ids import SessionId
from thalos_bot.speech.base import Audio, Speaker
from thalos_bot.speech.ogg import NotOggOpusError, read_ogg_opus
from thalos_bot.speech.spoken import clips, spoken_text

log = structlog.get_logger(__name__)

MODES = ("on", "off", "auto")


class VoiceModes(Protocol):
    async def get(self, channel_id: str, conversation_id: str) -> str | None: ...

    async def set(self, channel_id: str, conversation_id: str, mode: str) -> None: ...


@dataclass(frozen=True, slots=True)
class Speaking:
    speaker: Speaker
    settings: SpeechSettings
    modes: VoiceModes

    async def mode(self, message: InboundMessage) -> str:
        kept = await self.modes.get(message.channel_id, message.conversation_id)
        return kept or self.settings.mode

    async def wanted(self, message: InboundMessage) -> bool:
        mode = await self.mode(message)
        return mode == "on" or (mode == "auto" and message.voice)

    async def clips(
        self, session_id: SessionId, answer: str, *, turn: str | None = None
    ) -> list[VoiceClip]:
        """``answer`` read aloud, clip by clip (``turn``: the key of the answer's outbox
        row, named by each clip); raises :class:`~thalos_bot.speech.base.SpeechError`."""
        words = spoken_text(answer)
        pieces = clips(words, self.settings.max_clip_chars) if words.strip() else []
        made: list[VoiceClip] = []
        for number, piece in enumerate(pieces, start=1):
            audio = await self.speaker.speak(piece)
            duration, waveform = _measured(audio)
            made.append(
                VoiceClip(
                    session_id,
                    audio.mime_type,
                    audio.data,
                    duration,
                    number,
                    len(pieces),
                    waveform,
                    turn,
                )
            )
        log.info("answer_spoken", clips=len(made), characters=len(words), engine=self.speaker.name)
        return made


def _measured(audio: Audio) -> tuple[float | None, tuple[int, ...]]:
    """The clip's length and waveform, read from the OGG/Opus stream itself (so a
    server's ``opus``, whose length the engine cannot say, has both); another format
    keeps the length its engine gave, and no waveform."""
    if audio.mime_type != "audio/ogg":
        return audio.duration, ()
    try:
        read = read_ogg_opus(audio.data)
    except NotOggOpusError as exc:
        log.warning("speech_not_ogg_opus", problem=str(exc))
        return audio.duration, ()
    return read.duration, read.waveform


async def voice_command(
    argument: str, message: InboundMessage, speaking: Speaking | None
) -> Notice:
    """``/voice`` (say the mode) or ``/voice on|off|auto`` (keep it for this chat)."""
    if speaking is None:
        return Notice(
            "Spoken answers are off on this bot: the operator turns them on with "
            "[speech] enabled = true in bot.toml.",
            "warning",
        )
    wanted = argument.strip().lower()
    if not wanted:
        mode = await speaking.mode(message)
        return Notice(
            f"Spoken answers here: {mode}. {_meaning(mode)} /voice on|off|auto changes it."
        )
    if wanted not in MODES:
        return Notice(f"/voice takes on, off or auto, not {wanted!r}.", "warning")
    await speaking.modes.set(message.channel_id, message.conversation_id, wanted)
    return Notice(f"Spoken answers here: {wanted}. {_meaning(wanted)}")


def _meaning(mode: str) -> str:
    return {
        "on": "Every answer is read aloud too.",
        "off": "Answers are text only.",
        "auto": "An answer to a voice note is read aloud too.",
    }[mode]
