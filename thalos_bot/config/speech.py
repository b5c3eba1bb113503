"""``[speech]``: how answers are read aloud (text to speech), the mirror of
``[transcription]``.

Two engines: ``local`` (the default: ``espeak-ng`` encoded to OGG/Opus by ``ffmpeg``, no
network, no key) and ``openai`` (an OpenAI-compatible ``POST {base_url}/audio/speech``:
OpenAI itself, Kokoro-FastAPI, openedai-speech, LocalAI). A key, when the endpoint needs
one, comes from the environment variable ``[speech.openai] api_key_env`` names; it is
never written in ``bot.toml``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from thalos_bot.config.providers import ENV_NAME
from thalos_bot.config.types import Seconds

SpeechKind = Literal["local", "openai"]
SpeechMode = Literal["auto", "on", "off"]
"""When an answer is spoken: ``auto`` when the person's message was a voice note, ``on``
always, ``off`` never (the text is always sent as well)."""
SpeechFormat = Literal["mp3", "opus", "aac", "flac", "wav", "pcm"]
"""The ``response_format`` values of OpenAI's ``/audio/speech``."""

OPENAI_INPUT_LIMIT = 4096
"""OpenAI refuses a longer ``input``; no clip is ever longer."""
OPENAI_REQUIRED = (
    'speech.openai: required when speech.kind = "openai" (a [speech.openai] table with at '
    "least base_url)"
)


class LocalSpeechSettings(BaseModel):
    """``[speech.local]``: espeak-ng's voice and rate."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    voice: str = Field("en-us", pattern=r"^[A-Za-z0-9][A-Za-z0-9_+.-]{0,63}$")
    """An espeak-ng voice (``espeak-ng --voices`` lists them): ``en-us``, ``de``,
    ``fr``, with a variant as ``en-us+f3``."""
    words_per_minute: int = Field(175, ge=80, le=450)


class OpenAISpeechSettings(BaseModel):
    """``[speech.openai]``: an OpenAI-compatible ``POST {base_url}/audio/speech``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(pattern=r"^https?://\S+$")
    model: str = Field("tts-1", min_length=1, max_length=200)
    voice: str = Field("alloy", min_length=1, max_length=100)
    """OpenAI's voices are alloy, ash, ballad, coral, echo, fable, onyx, nova, sage,
    shimmer and verse; other servers have their own (Kokoro's ``af_bella``)."""
    format: SpeechFormat = "opus"
    """``opus`` is what Telegram, Matrix and Discord play as a voice message."""
    api_key_env: str | None = Field(None, pattern=ENV_NAME)
    """The environment variable holding the key (none: no key is sent, e.g. a local
    server)."""
    timeout: Seconds = 60.0

    @field_validator("base_url")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")


class SpeechSettings(BaseModel):
    """``[speech]``: spoken answers. Off unless ``enabled = true``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: StrictBool = False
    kind: SpeechKind = "local"
    mode: SpeechMode = "auto"
    """The default of every conversation (``/voice on|off|auto`` changes one)."""
    max_clip_chars: int = Field(1000, ge=100, le=OPENAI_INPUT_LIMIT)
    """A long answer is read as several clips of at most this many characters, split at
    sentence ends (about a minute of speech per 1000)."""
    local: LocalSpeechSettings = LocalSpeechSettings()
    openai: OpenAISpeechSettings | None = None

    def problem(self) -> str | None:
        """What is missing for the chosen engine (checked by ``Settings``, so the error
        names ``speech.openai`` itself)."""
        if self.kind == "openai" and self.openai is None:
            return OPENAI_REQUIRED
        return None
