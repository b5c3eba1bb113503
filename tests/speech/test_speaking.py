"""Spoken answers in the pump: an answer to a voice note is read aloud after its text,
a text is not (``auto``); ``/voice on|off|auto`` changes that for the conversation; the
prose is read, not the code; a long answer is several clips; a failure is one notice."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tests.fakes.speech_api import SpeechFake
from tests.pump.harness import running_pump
from thalos_bot.config.speech import OpenAISpeechSettings, SpeechSettings
from thalos_bot.domain.events import TurnCompleted, VoiceClip
from thalos_bot.providers.scripted import Say, ScriptedProvider
from thalos_bot.pump.speaking import Speaking
from thalos_bot.speech.base import Audio, SpeechError
from thalos_bot.speech.endpoint import EndpointSpeaker

pytestmark = pytest.mark.anyio


@dataclass
class RecordingSpeaker:
    """Records what it is asked to say; ``fails``: refuses, as a server would."""

    said: list[str] = field(default_factory=list)
    fails: bool = False
    name: str = "recording"
    model: str | None = None

    async def speak(self, text: str) -> Audio:
        if self.fails:
            raise SpeechError("the speech server refused the request (HTTP 500)")
        self.said.append(text)
        return Audio(b"OggS" + bytes(64), "audio/ogg", 1.5, len(text))


@dataclass
class MemoryVoiceModes:
    kept: dict[tuple[str, str], str] = field(default_factory=dict)

    async def get(self, channel_id: str, conversation_id: str) -> str | None:
        return self.kept.get((channel_id, conversation_id))

    async def set(self, channel_id: str, conversation_id: str, mode: str) -> None:
        self.kept[(channel_id, conversation_id)] = mode


def speaking(speaker: RecordingSpeaker, clip_chars: int = 1000) -> Speaking:
    settings = SpeechSettings(enabled=True, max_clip_chars=clip_chars)
    return Speaking(speaker, settings, MemoryVoiceModes())


async def test_a_voice_note_is_answered_in_voice_after_the_text_and_a_text_is_not() -> None:
    speaker = RecordingSpeaker()
    provider = ScriptedProvider([[Say("It is noon.")], [Say("Hello.")]])
    async with running_pump(provider, speaking=speaking(speaker)) as h:
        await h.source.send("what time is it", voice=True).wait()
        await h.source.send("hi").wait()
    deliveries = h.adapter.of()
    [clip] = [d for d in deliveries if isinstance(d, VoiceClip)]
    first = next(d for d in deliveries if isinstance(d, TurnCompleted))
    assert deliveries.index(first) < deliveries.index(clip)
    assert (clip.media_type, clip.duration, clip.part, clip.parts) == ("audio/ogg", 1.5, 1, 1)
    assert speaker.said == ["It is noon."]  # the text answer was not read


async def test_the_prose_is_read_and_the_code_is_not() -> None:
    speaker = RecordingSpeaker()
    answer = "Run this:\n\n```python\nprint('secret')\n```\n\nSee [the docs](https://e.org)."
    async with running_pump(ScriptedProvider([[Say(answer)]]), speaking=speaking(speaker)) as h:
        await h.source.send("how?", voice=True).wait()
    [said] = speaker.said
    assert "The code is in the message." in said
    assert "print" not in said
    assert "https" not in said
    assert "the docs" in said


async def test_voice_on_off_and_auto_are_kept_for_the_conversation() -> None:
    speaker = RecordingSpeaker()
    replies = [[Say("One.")], [Say("Two.")], [Say("Three.")]]
    async with running_pump(ScriptedProvider(replies), speaking=speaking(speaker)) as h:
        await h.source.send("/voice on").wait()
        await h.source.send("written").wait()  # read aloud: on
        await h.source.send("/voice off").wait()
        await h.source.send("spoken", voice=True).wait()  # not: off
        await h.source.send("/voice").wait()
        await h.source.send("/voice loud").wait()
        await h.source.send("other chat", "c2", voice=True).wait()  # c2 is still auto
    assert speaker.said == ["One.", "Three."]
    told = h.adapter.notices()
    assert told[0].startswith("Spoken answers here: on.")
    assert told[1].startswith("Spoken answers here: off.")
    assert told[2].startswith("Spoken answers here: off. Answers are text only.")
    assert told[3] == "/voice takes on, off or auto, not 'loud'."


async def test_a_long_answer_is_several_clips_in_order() -> None:
    speaker = RecordingSpeaker()
    answer = " ".join(f"Sentence number {n} is here." for n in range(30))
    async with running_pump(
        ScriptedProvider([[Say(answer)]]), speaking=speaking(speaker, clip_chars=200)
    ) as h:
        await h.source.send("tell me", voice=True).wait()
    clips = [d for d in h.adapter.of() if isinstance(d, VoiceClip)]
    assert len(clips) == len(speaker.said) > 1
    assert [c.part for c in clips] == list(range(1, len(clips) + 1))
    assert all(len(text) <= 200 for text in speaker.said)
    assert " ".join(speaker.said) == answer


async def test_a_failure_is_one_notice_and_the_text_stands() -> None:
    speaker = RecordingSpeaker(fails=True)
    provider = ScriptedProvider([[Say("It is noon.")]])
    async with running_pump(provider, speaking=speaking(speaker)) as h:
        await h.source.send("time?", voice=True).wait()
    assert not [d for d in h.adapter.of() if isinstance(d, VoiceClip)]
    assert h.adapter.notices() == [
        "The answer could not be read aloud: the speech server refused the request (HTTP 500)"
    ]
    assert any(isinstance(d, TurnCompleted) and d.text == "It is noon." for d in h.adapter.of())


async def test_with_speech_off_voice_says_how_to_turn_it_on() -> None:
    async with running_pump(ScriptedProvider()) as h:
        await h.source.send("/voice on").wait()
    [told] = h.adapter.notices()
    assert "[speech] enabled = true" in told


async def test_a_servers_opus_clip_gets_its_length_and_waveform_from_the_stream() -> None:
    """OpenAI's ``opus`` says nothing of its length; the OGG stream does (the fake's
    clip is half a second of a tone), and its packets draw the waveform."""
    with SpeechFake(api_key="sk-test") as fake:
        settings = OpenAISpeechSettings(base_url=fake.base_url)
        speaker = EndpointSpeaker(settings, api_key="sk-test")
        assert (await speaker.speak("Hi.")).duration is None, "the engine cannot say"
        voice = Speaking(speaker, SpeechSettings(enabled=True), MemoryVoiceModes())
        async with running_pump(ScriptedProvider([[Say("Hi.")]]), speaking=voice) as h:
            await h.source.send("hello", voice=True).wait()
    [clip] = [d for d in h.adapter.of() if isinstance(d, VoiceClip)]
    assert clip.duration == pytest.approx(0.5, abs=0.01)
    assert clip.waveform
    assert all(0 <= level <= 255 for level in clip.waveform)
