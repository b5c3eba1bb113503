"""What speech costs: characters synthesized, and dollars where the provider has a price.

List prices of OpenAI's speech models, in US dollars per million input characters
(openai.com/api/pricing): ``tts-1`` $15, ``tts-1-hd`` $30. ``gpt-4o-mini-tts`` is priced
by tokens ($0.60 per million text tokens in, $12 per million audio tokens out), which
OpenAI puts at about $0.015 per minute of speech; counted here as $12 per million
characters, an estimate. Any other model (a local server's) has no price: its cost is
unknown, not zero. The local engine costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

PER_MILLION_CHARACTERS: dict[str, float] = {
    "tts-1": 15.0,
    "tts-1-hd": 30.0,
    "gpt-4o-mini-tts": 12.0,
}


@dataclass(frozen=True, slots=True)
class SpeechCost:
    characters: int
    usd: float | None
    """None: the model has no known price."""


def speech_cost(characters: int, model: str | None) -> SpeechCost:
    """The cost of ``characters`` spoken by ``model`` (None: the local engine, free)."""
    if characters < 0:
        raise ValueError("characters must not be negative")
    if model is None:
        return SpeechCost(characters, 0.0)
    price = PER_MILLION_CHARACTERS.get(model)
    if price is None:
        return SpeechCost(characters, None)
    return SpeechCost(characters, characters * price / 1_000_000)
