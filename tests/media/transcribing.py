"""A host that transcribes through the local fake: for a transport's voice-note tests."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.fakes.transcription_api import TranscriptionFake
from thalos_bot.config.models import Settings
from thalos_bot.config.speech import SpeechSettings
from thalos_bot.config.transcription import TranscriptionSettings
from thalos_bot.domain.messages import TextBlock
from thalos_bot.providers.scripted import ScriptedProvider
from thalos_bot.pump.speaking import Speaking
from thalos_bot.speech.local import LocalSpeaker


@contextmanager
def transcribing(
    monkeypatch: pytest.MonkeyPatch, transcript: str
) -> Iterator[tuple[TranscriptionFake, Settings]]:
    """The fake, and host settings whose ``[transcription]`` points at it (its key, made
    for this test, in the environment as the daemon reads it)."""
    key = "sk-" + secrets.token_hex(8)
    monkeypatch.setenv("THALOS_TRANSCRIPTION_API_KEY", key)
    with TranscriptionFake(api_key=key, transcript=transcript) as stt:
        yield stt, Settings(transcription=TranscriptionSettings(base_url=stt.base_url))


class MemoryVoiceModes:
    """Each conversation's ``/voice`` in a dict."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], str] = {}

    async def get(self, channel_id: str, conversation_id: str) -> str | None:
        return self.kept.get((channel_id, conversation_id))

    async def set(self, channel_id: str, conversation_id: str, mode: str) -> None:
        self.kept[(channel_id, conversation_id)] = mode


def local_speaking() -> Speaking:
    """Answers to a voice note read aloud by the local engine, for real (espeak-ng and
    ffmpeg)."""
    settings = SpeechSettings(enabled=True)
    return Speaking(LocalSpeaker(settings.local), settings, MemoryVoiceModes())


def words_sent(provider: ScriptedProvider) -> list[str]:
    """The text blocks of the one request's last message."""
    (request,) = provider.requests
    return [b.text for b in request.messages[-1].content if isinstance(b, TextBlock)]
