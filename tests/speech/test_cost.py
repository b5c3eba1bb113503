"""Characters synthesized, priced where the provider has a price."""

from __future__ import annotations

import pytest

from thalos_bot.speech.cost import SpeechCost, speech_cost


def test_openai_models_at_their_list_prices() -> None:
    assert speech_cost(1_000_000, "tts-1") == SpeechCost(1_000_000, 15.0)
    assert speech_cost(1_000_000, "tts-1-hd") == SpeechCost(1_000_000, 30.0)
    assert speech_cost(4096, "gpt-4o-mini-tts").usd == pytest.approx(4096 * 12 / 1e6)


def test_the_local_engine_is_free_and_an_unknown_model_unpriced() -> None:
    assert speech_cost(300, None) == SpeechCost(300, 0.0)
    assert speech_cost(300, "kokoro") == SpeechCost(300, None)
    with pytest.raises(ValueError, match="negative"):
        speech_cost(-1, "tts-1")
