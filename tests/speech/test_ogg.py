"""A clip's length and waveform, read from its OGG/Opus framing alone."""

from __future__ import annotations

import pytest

from tests.fakes.speech_api import audio_of
from thalos_bot.config.speech import LocalSpeechSettings
from thalos_bot.speech.local import LocalSpeaker
from thalos_bot.speech.ogg import WAVEFORM_POINTS, NotOggOpusError, read_ogg_opus

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def test_a_tone_from_ffmpeg_lasts_what_it_was_made_to() -> None:
    read = read_ogg_opus(audio_of("opus"))  # half a second of a steady tone
    assert read.duration == pytest.approx(0.5, abs=0.01)
    assert 0 < len(read.waveform) <= WAVEFORM_POINTS
    assert all(0 <= level <= 255 for level in read.waveform)


async def test_speech_has_its_pauses_in_the_waveform() -> None:
    audio = await LocalSpeaker(LocalSpeechSettings()).speak(
        "The first sentence is said here. And after a pause, the second one."
    )
    read = read_ogg_opus(audio.data)
    assert audio.duration is not None
    assert read.duration == pytest.approx(audio.duration, abs=0.03), "espeak-ng's own length"
    assert len(read.waveform) == WAVEFORM_POINTS
    assert max(read.waveform) == 255
    assert min(read.waveform) < 64, "the pause between the sentences is quiet"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "not an Ogg stream"),
        (b"ID3\x04" + bytes(40), "not an Ogg stream"),
        (b"OggS" + bytes(10), "no Ogg page at byte 0"),
        (audio_of("opus")[:300], "cut short"),
    ],
)
def test_anything_else_is_refused_with_a_reason(data: bytes, problem: str) -> None:
    with pytest.raises(NotOggOpusError, match=problem):
        read_ogg_opus(data)


def test_an_ogg_stream_of_another_codec_is_refused() -> None:
    ogg = bytearray(audio_of("opus"))
    at = ogg.index(b"OpusHead")
    ogg[at : at + 8] = b"VorbisXX"
    with pytest.raises(NotOggOpusError, match="no OpusHead"):
        read_ogg_opus(bytes(ogg))
