"""Voice notes to text through an OpenAI-compatible ``/audio/transcriptions`` endpoint.

The key comes from the environment and is sent only as the ``Authorization`` header;
it never reaches a log line. A failure is a :class:`TranscriptionError` with a sentence
of ours; the endpoint's own text is for nobody (it may echo the request).
"""

from __future__ import annotations

import os

import httpx2
import structlog

from thalos_bot.config.transcription import TRANSCRIPTION_KEY_ENV, TranscriptionSettings

log = structlog.get_logger(__name__)

UNREACHABLE = "The transcription service could not be reached."
REFUSED_KEY = f"The transcription service refused the key (check {TRANSCRIPTION_KEY_ENV})."
REFUSED = "The transcription service could not transcribe this audio."
TOO_LARGE = "The voice note is larger than the transcription limit of {limit} MB."
NOTHING_HEARD = "Nothing could be heard in the voice note."
UNREADABLE = (
    "The transcription service answered with something that is not a transcript. "
    "Send the voice note again, or type the message."
)


class TranscriptionError(Exception):
    def __init__(self, user_message: str) -> None:
        super().__init__(user_message)
        self.user_message = user_message


class Transcriber:
    def __init__(self, settings: TranscriptionSettings, api_key: str | None = None) -> None:
        self.settings = settings
        self._key = api_key if api_key is not None else os.environ.get(TRANSCRIPTION_KEY_ENV)

    async def transcribe(self, audio: bytes, *, filename: str, media_type: str) -> str:
        """The transcript, stripped; raises :class:`TranscriptionError`."""
        settings = self.settings
        if len(audio) > settings.max_bytes:
            raise TranscriptionError(TOO_LARGE.format(limit=settings.max_bytes // (1024 * 1024)))
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        data = {"model": settings.model, "response_format": "json"}
        if settings.language:
            data["language"] = settings.language
        try:
            async with httpx2.AsyncClient(timeout=settings.timeout) as client:
                response = await client.post(
                    f"{settings.base_url}/audio/transcriptions",
                    headers=headers,
                    data=data,
                    files={"file": (filename, audio, media_type)},
                )
        except httpx2.HTTPError as exc:
            log.warning("transcription_unreachable", error=type(exc).__name__)
            raise TranscriptionError(UNREACHABLE) from exc
        if response.status_code in {401, 403}:
            log.warning("transcription_refused", status=response.status_code)
            raise TranscriptionError(REFUSED_KEY)
        if response.status_code != 200:
            log.warning("transcription_failed", status=response.status_code)
            raise TranscriptionError(REFUSED if response.status_code < 500 else UNREACHABLE)
        try:
            answer = response.json()
        except ValueError as exc:
            log.warning("transcription_unreadable", shape="not json")
            raise TranscriptionError(UNREADABLE) from exc
        if not isinstance(answer, dict):
            log.warning("transcription_unreadable", shape=type(answer).__name__)
            raise TranscriptionError(UNREADABLE)
        text = answer.get("text")
        if not isinstance(text, str) or not text.strip():
            raise TranscriptionError(NOTHING_HEARD)
        return text.strip()
