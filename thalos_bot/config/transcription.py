"""``[transcription]``: where voice notes and audio files are turned into text."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from thalos_bot.config.types import Seconds

TRANSCRIPTION_KEY_ENV = "THALOS_TRANSCRIPTION_API_KEY"


class TranscriptionSettings(BaseModel):
    """An OpenAI-compatible ``POST {base_url}/audio/transcriptions`` endpoint: OpenAI's
    own (``https://api.openai.com/v1``), Groq's, or a local whisper server. The key, when
    the endpoint needs one, comes from ``THALOS_TRANSCRIPTION_API_KEY``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(pattern=r"^https?://\S+$")
    model: str = Field("whisper-1", min_length=1, max_length=200)
    language: str | None = Field(None, pattern=r"^[a-z]{2,3}$")
    """An ISO-639-1 hint (``en``, ``de``); default: the endpoint detects it."""
    timeout: Seconds = 60.0
    max_bytes: int = Field(25 * 1024 * 1024, gt=0)
    """Audio larger than this is not sent (OpenAI accepts up to 25 MB)."""

    @field_validator("base_url")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")
