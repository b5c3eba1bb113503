"""What every speech engine gives and how it fails."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


class SpeechError(Exception):
    """Speech could not be made. ``user_message`` is one sentence a person may read (it
    never holds a key); the caller sends the answer as text with it."""

    def __init__(self, user_message: str) -> None:
        super().__init__(user_message)
        self.user_message = user_message


@dataclass(frozen=True, slots=True)
class Audio:
    """One spoken clip."""

    data: bytes
    mime_type: str
    """``audio/ogg`` for OGG/Opus (a voice message on Telegram, Matrix, Discord)."""
    duration: float | None
    """Seconds; None when the engine's format does not say (an mp3 from an endpoint)."""
    characters: int
    """How many characters were synthesized (what a provider bills)."""

    @property
    def size(self) -> int:
        return len(self.data)


@runtime_checkable
class Speaker(Protocol):
    """A text-to-speech engine."""

    @property
    def name(self) -> str:
        """What the logs and ``doctor`` call it: ``espeak-ng``, ``openai tts-1``."""
        ...

    @property
    def model(self) -> str | None:
        """The priced model (None for a local engine)."""
        ...

    async def speak(self, text: str) -> Audio:
        """``text`` (one clip, at most the configured length) as audio; raises
        :class:`SpeechError`."""
        ...
