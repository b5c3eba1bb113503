"""An OpenAI-compatible ``POST {base_url}/audio/speech``: OpenAI, Kokoro-FastAPI,
openedai-speech, LocalAI.

The key comes from the environment variable ``[speech.openai] api_key_env`` names and is
sent only in the ``Authorization`` header. A refusal becomes a :class:`SpeechError`
carrying the server's own ``error.message`` (OpenAI's says which voice or format it
refused); any copy of the key in it is blanked first, and a refused key is named by its
variable, never by its value.
"""

from __future__ import annotations

import os
from typing import Any

import httpx2
import structlog

from thalos_bot.config.speech import OPENAI_INPUT_LIMIT, OpenAISpeechSettings, SpeechFormat
from thalos_bot.speech.base import Audio, SpeechError
from thalos_bot.speech.wav import NotWavError, read_wav

log = structlog.get_logger(__name__)

MIME_TYPES: dict[SpeechFormat, str] = {
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}
"""What each ``response_format`` is (OpenAI's opus comes in an OGG container; pcm is raw
24 kHz 16-bit mono samples)."""
PCM_BYTE_RATE = 24_000 * 2

UNREACHABLE = "The speech service could not be reached."
REFUSED = "The speech service refused the text: {message}"
REFUSED_KEY = "The speech service refused the key{where}."
FAILED = "The speech service failed (HTTP {status})."
EMPTY = "The speech service answered with no audio."
TOO_LONG = "The text is longer than the speech service takes ({limit} characters)."
NOTHING_TO_SAY = "There was nothing to read aloud."
MESSAGE_LIMIT = 300
"""Characters of the server's message kept (a server may echo a long request)."""


class EndpointSpeaker:
    """:class:`~thalos_bot.speech.base.Speaker` on an OpenAI-compatible endpoint."""

    def __init__(self, settings: OpenAISpeechSettings, api_key: str | None = None) -> None:
        self.settings = settings
        env = settings.api_key_env
        self._key = api_key if api_key is not None else (os.environ.get(env) if env else None)

    @property
    def name(self) -> str:
        return f"openai-compatible {self.settings.model}"

    @property
    def model(self) -> str | None:
        return self.settings.model

    async def speak(self, text: str) -> Audio:
        settings = self.settings
        if not text.strip():
            raise SpeechError(NOTHING_TO_SAY)
        if len(text) > OPENAI_INPUT_LIMIT:
            raise SpeechError(TOO_LONG.format(limit=OPENAI_INPUT_LIMIT))
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        body = {
            "model": settings.model,
            "voice": settings.voice,
            "input": text,
            "response_format": settings.format,
        }
        try:
            async with httpx2.AsyncClient(timeout=settings.timeout) as client:
                response = await client.post(
                    f"{settings.base_url}/audio/speech", headers=headers, json=body
                )
        except httpx2.HTTPError as exc:
            log.warning("speech_unreachable", error=type(exc).__name__)
            raise SpeechError(UNREACHABLE) from exc
        if response.status_code in {401, 403}:
            log.warning("speech_refused_key", status=response.status_code)
            where = (
                f" (check {settings.api_key_env})"
                if settings.api_key_env
                else (" (none was sent: name its variable in [speech.openai] api_key_env)")
            )
            raise SpeechError(REFUSED_KEY.format(where=where))
        if response.status_code != 200:
            message = self._server_message(response)
            log.warning("speech_refused", status=response.status_code, message=message)
            if response.status_code < 500 and message:
                raise SpeechError(REFUSED.format(message=message))
            raise SpeechError(FAILED.format(status=response.status_code))
        audio = response.content
        if not audio:
            raise SpeechError(EMPTY)
        return Audio(
            audio, MIME_TYPES[settings.format], _duration(settings.format, audio), len(text)
        )

    def _server_message(self, response: httpx2.Response) -> str:
        """The ``error.message`` of an OpenAI error body (or ``""``), with no key in it."""
        try:
            answer: Any = response.json()
        except ValueError:
            return ""
        error = answer.get("error") if isinstance(answer, dict) else None
        if isinstance(error, dict):
            message = error.get("message")
        elif isinstance(answer, dict):
            message = answer.get("detail") or answer.get("message")
        else:
            message = None
        if not isinstance(message, str):
            return ""
        if self._key:
            message = message.replace(self._key, "[key]")
        return " ".join(message.split())[:MESSAGE_LIMIT]


def _duration(fmt: SpeechFormat, audio: bytes) -> float | None:
    """Seconds, where the format says so cheaply (wav, pcm); else None."""
    if fmt == "pcm":
        return len(audio) / PCM_BYTE_RATE
    if fmt == "wav":
        try:
            return read_wav(audio).duration
        except NotWavError:
            return None
    return None
