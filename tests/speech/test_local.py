"""The local engine for real: espeak-ng and ffmpeg make an OGG/Opus voice clip."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from thalos_bot.config.speech import LocalSpeechSettings, SpeechSettings
from thalos_bot.speech import Audio, Speaker, SpeechError, build_speaker
from thalos_bot.speech.local import LocalSpeaker, install_line, missing_programs
from thalos_bot.speech.wav import NotWavError, read_wav, wav_bytes

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _ogg_pages(data: bytes) -> list[bytes]:
    """The payload-bearing pages of an OGG stream, checking each page's framing."""
    pages, at = [], 0
    while at < len(data):
        assert data[at : at + 4] == b"OggS", f"no page starts at {at}"
        segments = data[at + 26]
        table = data[at + 27 : at + 27 + segments]
        body = at + 27 + segments
        end = body + sum(table)
        pages.append(data[body:end])
        at = end
    return pages


async def test_the_local_engine_speaks_ogg_opus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    speaker = LocalSpeaker(LocalSpeechSettings())
    assert isinstance(speaker, Speaker)
    audio = await speaker.speak("Hello there. This is the bot, speaking for itself.")
    assert isinstance(audio, Audio)
    assert audio.mime_type == "audio/ogg"
    assert audio.data.startswith(b"OggS")
    pages = _ogg_pages(audio.data)
    assert pages[0].startswith(b"OpusHead")
    assert pages[1].startswith(b"OpusTags")
    assert len(pages) > 2, "sound follows the headers"
    assert audio.duration is not None
    assert audio.duration > 0
    assert audio.characters == len("Hello there. This is the bot, speaking for itself.")
    assert list(tmp_path.iterdir()) == [], "no file left behind"


async def test_text_that_looks_like_an_option_is_read_not_obeyed() -> None:
    audio = await LocalSpeaker(LocalSpeechSettings()).speak("--help me with -v this")
    assert audio.data.startswith(b"OggS")
    assert audio.duration is not None
    assert audio.duration > 0


async def test_a_longer_text_is_a_longer_clip() -> None:
    speaker = LocalSpeaker(LocalSpeechSettings(voice="en-us", words_per_minute=200))
    short = await speaker.speak("Yes.")
    long = await speaker.speak("Yes. " * 20)
    assert short.duration is not None
    assert long.duration is not None
    assert long.duration > short.duration


async def test_missing_programs_name_the_package_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert missing_programs() == ["espeak-ng", "ffmpeg"]
    with capture_logs() as logs, pytest.raises(SpeechError) as caught:
        await LocalSpeaker(LocalSpeechSettings()).speak("Hello.")
    assert "apt-get install -y --no-install-recommends espeak-ng ffmpeg" in str(caught.value)
    assert caught.value.user_message == str(caught.value)
    assert [e["event"] for e in logs] == ["speech_programs_missing"]


async def test_an_unknown_voice_is_a_speech_error() -> None:
    with capture_logs() as logs, pytest.raises(SpeechError, match="espeak-ng failed"):
        await LocalSpeaker(LocalSpeechSettings(voice="xx-nowhere")).speak("Hello.")
    assert "speech_program_failed" in [e["event"] for e in logs]


async def test_nothing_to_say_is_a_speech_error() -> None:
    with pytest.raises(SpeechError, match="nothing to read"):
        await LocalSpeaker(LocalSpeechSettings()).speak("  \n")


def test_install_line_names_each_package_once() -> None:
    assert install_line(["ffmpeg"]) == "apt-get install -y --no-install-recommends ffmpeg"


def test_the_factory_builds_the_configured_engine() -> None:
    assert build_speaker(SpeechSettings()) is None
    local = build_speaker(SpeechSettings(enabled=True))
    assert isinstance(local, LocalSpeaker)
    assert local.model is None


def test_a_wav_written_to_a_pipe_counts_the_bytes_that_came() -> None:
    wav = wav_bytes(b"\0\0" * 16000, sample_rate=16000)
    assert read_wav(wav).duration == 1.0
    streamed = wav[:40] + b"\xff\xff\xff\x7f" + wav[44:]  # the size a pipe cannot fix
    assert read_wav(streamed).duration == 1.0
    with pytest.raises(NotWavError):
        read_wav(b"OggS" + b"\0" * 40)
