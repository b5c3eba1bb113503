"""Answers read aloud on Telegram: ``sendVoice`` (OGG/Opus, with its duration) after the
text, paced and exactly once like a photo."""

from __future__ import annotations

import pytest

from tests.fakes.telegram_api import TelegramFake
from tests.media.transcribing import local_speaking, transcribing
from tests.telegram.harness import USER, Bot, running_bot
from thalos_bot.channels import notices
from thalos_bot.speech.ogg import read_ogg_opus

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CAPTION = notices.voice_clip(1, 1)
VOICE_ON = "Spoken answers here: on."
VOICE_OFF = "Spoken answers here: off."


def _voices(fake: TelegramFake) -> list[str]:
    return [m.text for m in fake.messages(USER) if m.kind == "voice"]


async def _voice_on(fake: TelegramFake, bot: Bot) -> None:
    bot.say("/voice on")
    await fake.wait_for(lambda: any(t.startswith(VOICE_ON) for t in fake.texts(USER)) or None)


async def test_a_voice_note_is_answered_with_a_voice_message(
    fake: TelegramFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    with transcribing(monkeypatch, "how are you") as (_, settings):
        async with running_bot(fake, settings=settings, speaking=local_speaking()):
            fake.push_voice(USER, USER, b"OggS" + bytes(100))
            await fake.wait_for(lambda: _voices(fake) or None)
    kinds = [(m.kind, m.text) for m in fake.messages(USER)]
    assert kinds[-2:] == [("text", "You said: how are you"), ("voice", CAPTION)]
    (call,) = [c for c in fake.calls("sendVoice") if c.status == 200]
    audio = call.params["voice"]["content"]
    assert read_ogg_opus(audio).duration > 0.5, "OGG/Opus, or this raises"
    assert int(call.params["duration"]) == max(1, round(read_ogg_opus(audio).duration))
    assert call.params["caption"] == CAPTION


async def test_a_typed_message_gets_no_voice(fake: TelegramFake) -> None:
    async with running_bot(fake, speaking=local_speaking()) as bot:
        bot.say("hello")
        await fake.wait_for(lambda: "You said: hello" in fake.texts(USER) or None)
        bot.say("/voice")
        await fake.wait_for(
            lambda: any(t.startswith("Spoken answers here:") for t in fake.texts(USER)) or None
        )
    assert fake.calls("sendVoice") == []


async def test_under_flood_control_the_voice_waits_and_is_sent_once(
    fake: TelegramFake,
) -> None:
    fake.fail_next("sendVoice", 429, retry_after=1)
    async with running_bot(fake, speaking=local_speaking()) as bot:
        await _voice_on(fake, bot)
        bot.say("speak")
        await fake.wait_for(lambda: _voices(fake) or None)
    assert _voices(fake) == [CAPTION]
    assert [c.status for c in fake.calls("sendVoice")] == [429, 200]
    assert fake.retry_after_violations == []


async def test_a_voice_in_doubt_is_checked_not_sent_twice(fake: TelegramFake) -> None:
    fake.timeout_next("sendVoice", close=True)  # it arrives; the answer is lost
    async with running_bot(fake, speaking=local_speaking(), request_timeout=0.3) as bot:
        await _voice_on(fake, bot)
        bot.say("speak")
        await fake.wait_for(lambda: fake.calls("editMessageCaption") or None)
        bot.say("/voice off")
        await fake.wait_for(lambda: any(t.startswith(VOICE_OFF) for t in fake.texts(USER)) or None)
        bot.say("still there?")
        await fake.wait_for(lambda: "You said: still there?" in fake.texts(USER) or None)
    assert _voices(fake) == [CAPTION]
    assert len(fake.calls("sendVoice")) == 1
    (probe,) = fake.calls("editMessageCaption")
    assert "not modified" in str(probe.response)
