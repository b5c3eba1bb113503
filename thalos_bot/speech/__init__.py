"""Answers read aloud: the text a person hears (:mod:`.spoken`), the engines that speak
it (:mod:`.local`, :mod:`.endpoint`), and what it costs (:mod:`.cost`).

Every engine is a :class:`~thalos_bot.speech.base.Speaker`; every failure is a
:class:`~thalos_bot.speech.base.SpeechError` with a sentence for the person, after which
the caller sends the text alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from thalos_bot.speech.base import Audio, Speaker, SpeechError
from thalos_bot.speech.spoken import CODE_SENTENCE, clips, spoken_text

if TYPE_CHECKING:
    from thalos_bot.speech.factory import build_speaker

__all__ = [
    "CODE_SENTENCE",
    "Audio",
    "Speaker",
    "SpeechError",
    "build_speaker",
    "clips",
    "spoken_text",
]


def __getattr__(name: str) -> Any:
    """``build_speaker`` on first use: the engines (and the HTTP client of the endpoint
    one) stay unloaded for whoever only needs :mod:`.base` or :mod:`.spoken`."""
    if name == "build_speaker":
        from thalos_bot.speech.factory import build_speaker

        return build_speaker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
