"""A transcription endpoint that answers 200 with something other than a JSON object
(an array, a string, a number) gives a typed error and the person a clear notice."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.fakes.anthropic_api import text_reply
from tests.fakes.transcription_api import TranscriptionFake
from tests.media.host import USER, running_daemon
from thalos_bot.config.transcription import TranscriptionSettings
from thalos_bot.media.transcription import UNREADABLE, Transcriber, TranscriptionError

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("body", [["hello"], "hello", 42, [{"text": "hello"}]])
async def test_a_non_object_answer_is_a_transcription_error(body: object) -> None:
    with TranscriptionFake(api_key="sk-t", body=body) as fake:
        transcriber = Transcriber(TranscriptionSettings(base_url=fake.base_url), api_key="sk-t")
        with capture_logs() as logs, pytest.raises(TranscriptionError) as caught:
            await transcriber.transcribe(b"OggS", filename="voice.ogg", media_type="audio/ogg")
    assert caught.value.user_message == UNREADABLE
    assert [e["event"] for e in logs] == ["transcription_unreadable"]
    assert logs[0]["shape"] == type(body).__name__
    assert "hello" not in str(logs), "the endpoint's own text is for nobody"


async def test_the_person_is_told_and_the_next_message_is_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THALOS_TRANSCRIPTION_API_KEY", "sk-t")
    with TranscriptionFake(api_key="sk-t", body=["what is the weather like"]) as stt:
        extra = f'[transcription]\nbase_url = "{stt.base_url}"\n'
        with capture_logs() as logs:
            async with running_daemon(tmp_path, monkeypatch, extra=extra) as bot:
                bot.anthropic.enqueue(text_reply("Sunny."))
                bot.telegram.push_voice(USER, USER, b"OggS fake opus")
                assert await bot.shown(lambda t: len(t) >= 1) == [UNREADABLE]
                bot.telegram.push_text(USER, USER, "is it sunny?")
                texts = await bot.shown(lambda t: "Sunny." in t)
    assert texts == [UNREADABLE, "Sunny."]
    assert len(stt.requests) == 1
    assert len(bot.anthropic.requests) == 1, "the voice note never reached the model"
    events = [e["event"] for e in logs]
    assert "transcription_unreadable" in events
    assert "telegram_update_failed" not in events
