"""Answers read aloud: the text a person hears (:mod:`.spoken`), the engines that speak
it (:mod:`.local`, :mod:`.endpoint`), and what it costs (:mod:`.cost`).

Every engine is a :class:`~thalos_bot.speech.base.Speaker`; every failure is a
:class:`~thalos_bot.speech.base.SpeechError` with a sentence for the person, after which
the caller sends the text alone.
"""

from __future__ import annotations

from thalos_bot.speech.base import Audio, Speaker, SpeechError
from thalos_bot.speech.factory import build_speaker
from thalos_bot.speech.spoken import CODE_SENTENCE, clips, spoken_text

__all__ = [
    "CODE_SENTENCE",
    "Audio",
    "Speaker",
    "SpeechError",
    "build_speaker",
    "clips",
    "spoken_text",
]
