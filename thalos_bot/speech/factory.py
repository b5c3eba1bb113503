"""The speaker ``[speech]`` names."""

from __future__ import annotations

from thalos_bot.config.speech import SpeechSettings
from thalos_bot.speech.base import Speaker
from thalos_bot.speech.endpoint import EndpointSpeaker
from thalos_bot.speech.local import LocalSpeaker


def build_speaker(settings: SpeechSettings) -> Speaker | None:
    """The configured engine; None when speech is off."""
    if not settings.enabled:
        return None
    if settings.kind == "openai":
        if settings.openai is None:  # Settings refuses this; a hand-made model may not
            raise ValueError('speech.openai: required when speech.kind = "openai"')
        return EndpointSpeaker(settings.openai)
    return LocalSpeaker(settings.local)
