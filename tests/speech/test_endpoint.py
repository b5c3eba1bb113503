"""The OpenAI-compatible speaker against the strict fake of ``/v1/audio/speech``."""

from __future__ import annotations

import socket

import pytest
from structlog.testing import capture_logs

from tests.fakes.speech_api import FORMATS, SpeechFake, audio_of
from thalos_bot.config.speech import OpenAISpeechSettings, SpeechSettings
from thalos_bot.speech import SpeechError, build_speaker
from thalos_bot.speech.endpoint import EndpointSpeaker
from thalos_bot.speech.wav import read_wav

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

KEY = "sk-speech-secret-4f1e"


def speaker(fake: SpeechFake, *, key: str | None = KEY, **fields: object) -> EndpointSpeaker:
    settings = OpenAISpeechSettings.model_validate(
        {"base_url": fake.base_url, "api_key_env": "THALOS_TEST_SPEECH_KEY", **fields}
    )
    return EndpointSpeaker(settings, api_key=key)


async def test_a_clip_is_spoken_in_ogg_opus_by_default() -> None:
    with SpeechFake(api_key=KEY) as fake:
        audio = await speaker(fake).speak("Hello there.")
    assert audio.mime_type == "audio/ogg"
    assert audio.data.startswith(b"OggS")
    assert b"OpusHead" in audio.data
    assert audio.characters == len("Hello there.")
    (call,) = fake.requests
    assert (call.model, call.voice, call.input, call.response_format) == (
        "tts-1",
        "alloy",
        "Hello there.",
        "opus",
    )
    assert call.authorization == f"Bearer {KEY}"


@pytest.mark.parametrize("fmt", ["wav", "pcm", "mp3"])
async def test_each_format_is_named_and_timed_where_it_can_be(fmt: str) -> None:
    with SpeechFake(api_key=KEY) as fake:
        audio = await speaker(fake, format=fmt, voice="nova", model="tts-1-hd").speak("Hi.")
    assert audio.data == audio_of(fmt)
    expected = {"wav": "audio/wav", "pcm": "audio/pcm", "mp3": "audio/mpeg"}[fmt]
    assert audio.mime_type == expected
    if fmt == "mp3":
        assert audio.duration is None
    else:
        assert audio.duration == pytest.approx(0.5)


async def test_the_key_comes_from_the_variable_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THALOS_TEST_SPEECH_KEY", KEY)
    with SpeechFake(api_key=KEY) as fake:
        settings = SpeechSettings.model_validate(
            {
                "enabled": True,
                "kind": "openai",
                "openai": {"base_url": fake.base_url, "api_key_env": "THALOS_TEST_SPEECH_KEY"},
            }
        )
        built = build_speaker(settings)
        assert isinstance(built, EndpointSpeaker)
        assert built.model == "tts-1"
        await built.speak("Hello.")
    assert fake.requests[0].authorization == f"Bearer {KEY}"


@pytest.mark.parametrize(
    ("fields", "text", "server_says"),
    [
        ({"voice": "bob"}, "Hello.", "Invalid value: 'bob'. Supported values are: 'alloy'"),
        ({"format": "wav", "model": "tts-9"}, "Hello.", "The model `tts-9` does not exist"),
    ],
)
async def test_a_refusal_carries_the_servers_message_and_never_the_key(
    fields: dict[str, object], text: str, server_says: str
) -> None:
    with SpeechFake(api_key=KEY) as fake:
        settings = OpenAISpeechSettings.model_validate({"base_url": fake.base_url, **fields})
        with capture_logs() as logs, pytest.raises(SpeechError) as caught:
            await EndpointSpeaker(settings, api_key=KEY).speak(text)
    assert server_says in caught.value.user_message
    assert caught.value.user_message.startswith("The speech service refused the text: ")
    assert KEY not in caught.value.user_message
    assert KEY not in str(logs)
    assert fake.requests == []


async def test_a_bad_format_from_a_hand_made_setting_is_refused_by_the_server() -> None:
    # The configuration refuses such a format; a compatible server may take other names,
    # so the client sends what it is given and reports the server's refusal.
    with SpeechFake(api_key=KEY) as fake:
        settings = OpenAISpeechSettings.model_construct(
            base_url=fake.base_url,
            model="tts-1",
            voice="alloy",
            format="ogg",  # type: ignore[arg-type]
            api_key_env=None,
            timeout=10.0,
        )
        with pytest.raises(SpeechError) as caught:
            await EndpointSpeaker(settings, api_key=KEY).speak("Hello.")
    assert "Invalid value: 'ogg'" in caught.value.user_message
    assert fake.refusals[0]["error"]["param"] == "response_format"


async def test_input_over_4096_characters_is_refused_before_it_is_sent() -> None:
    with SpeechFake(api_key=KEY) as fake, pytest.raises(SpeechError, match="4096 characters"):
        await speaker(fake).speak("a" * 4097)
    assert fake.refusals == []
    assert fake.requests == []


async def test_the_servers_echo_of_a_long_input_is_cut_short() -> None:
    # A compatible server with a lower limit than ours: its refusal echoes the input.
    with SpeechFake(api_key=KEY, max_input=100) as fake:
        client = EndpointSpeaker(OpenAISpeechSettings(base_url=fake.base_url), api_key=KEY)
        with pytest.raises(SpeechError) as caught:
            await client.speak(f"{KEY} " * 40)
    assert "String should have at most 100 characters" in caught.value.user_message
    assert KEY not in caught.value.user_message, "the key is blanked even when echoed"
    assert len(caught.value.user_message) < 400


async def test_a_refused_key_names_the_variable_not_the_key() -> None:
    with SpeechFake(api_key=KEY) as fake:
        with pytest.raises(SpeechError) as wrong:
            await speaker(fake, key="sk-wrong-key").speak("Hello.")
        with pytest.raises(SpeechError) as none:
            await EndpointSpeaker(OpenAISpeechSettings(base_url=fake.base_url)).speak("Hello.")
    assert wrong.value.user_message == (
        "The speech service refused the key (check THALOS_TEST_SPEECH_KEY)."
    )
    assert "sk-wrong-key" not in wrong.value.user_message
    assert "api_key_env" in none.value.user_message
    assert [r["error"]["message"] for r in fake.refusals] == [
        "Incorrect API key provided.",
        "You didn't provide an API key.",
    ]


async def test_an_unreachable_server_is_a_speech_error() -> None:
    # A port held bound but not listening refuses connections, and no other test (or
    # xdist worker) can start a server on it meanwhile, as one could on a freed port.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{held.getsockname()[1]}/v1"
        with pytest.raises(SpeechError, match="could not be reached"):
            await EndpointSpeaker(OpenAISpeechSettings(base_url=url, timeout=5)).speak("Hello.")


async def test_the_fake_accepts_every_format_and_the_wav_is_real() -> None:
    with SpeechFake() as fake:
        for fmt in FORMATS:
            await speaker(fake, key=None, format=fmt).speak("Hi.")
    assert [c.response_format for c in fake.requests] == list(FORMATS)
    assert read_wav(audio_of("wav")).duration == pytest.approx(0.5)
    assert audio_of("opus").startswith(b"OggS")
    assert audio_of("flac").startswith(b"fLaC")
