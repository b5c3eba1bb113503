"""A local OpenAI-compatible ``POST /v1/audio/speech`` endpoint, as strict as OpenAI's
documented API, for tests over real sockets.

    with SpeechFake(api_key="sk-test") as fake:
        base_url = fake.base_url            # ends in /v1, like OpenAI's
        fake.requests                       # what was accepted, in order

Refused as OpenAI refuses (``{"error": {"message", "type": "invalid_request_error",
"param", "code"}}``): no ``Authorization: Bearer`` key (401), a wrong key (401
``invalid_api_key``), a body that is not a JSON object (400), a missing ``model``,
``input`` or ``voice`` (400), an ``input`` over 4,096 characters (400; the message
echoes the input, as OpenAI's does), an unknown voice or ``response_format`` (400
``invalid_value``, listing the supported ones), a ``speed`` outside 0.25–4.0 (400), and
an unknown model (404 ``model_not_found``: OpenAI answers a model it does not have with
404, as its chat completions do).

An accepted request gets real audio in the format asked for: half a second of a tone,
made as WAV here and encoded by ``ffmpeg`` (once per format per test run), or raw
24 kHz 16-bit samples for ``pcm``.
"""

from __future__ import annotations

import functools
import math
import struct
import subprocess
from dataclasses import dataclass
from typing import Any

from tests.fakes.openai_audio import AudioFake, error
from tests.fakes.telegram_http import HttpRequest
from tests.fakes.telegram_server import Outcome
from thalos_bot.speech.wav import wav_bytes

VOICES = (
    "alloy",
    "ash",
    "ballad",
    "coral",
    "echo",
    "fable",
    "onyx",
    "nova",
    "sage",
    "shimmer",
    "verse",
)
FORMATS = ("mp3", "opus", "aac", "flac", "wav", "pcm")
MODELS = ("tts-1", "tts-1-hd", "gpt-4o-mini-tts")
MAX_INPUT = 4096
SAMPLE_RATE = 24_000
"""OpenAI's speech is 24 kHz, 16-bit, mono."""
TONE_SECONDS = 0.5
CONTENT_TYPES = {
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}
_FFMPEG_OUT = {
    "mp3": ["-c:a", "libmp3lame", "-f", "mp3"],
    "opus": ["-c:a", "libopus", "-ar", "48000", "-f", "ogg"],
    "aac": ["-c:a", "aac", "-f", "adts"],
    "flac": ["-c:a", "flac", "-f", "flac"],
}


@dataclass(frozen=True)
class SpeechCall:
    model: str
    voice: str
    input: str
    response_format: str
    authorization: str


def _listed(values: tuple[str, ...]) -> str:
    quoted = [f"'{value}'" for value in values]
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}"


def tone_pcm(seconds: float = TONE_SECONDS) -> bytes:
    """A 440 Hz tone as 24 kHz 16-bit mono little-endian samples."""
    count = int(SAMPLE_RATE * seconds)
    return b"".join(
        struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * n / SAMPLE_RATE)))
        for n in range(count)
    )


@functools.cache
def audio_of(response_format: str) -> bytes:
    """Half a second of real audio in ``response_format``."""
    pcm = tone_pcm()
    if response_format == "pcm":
        return pcm
    wav = wav_bytes(pcm, sample_rate=SAMPLE_RATE)
    if response_format == "wav":
        return wav
    command = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-f", "wav"]
    command += ["-i", "pipe:0", *_FFMPEG_OUT[response_format], "pipe:1"]
    return subprocess.run(command, input=wav, capture_output=True, check=True).stdout


class SpeechFake(AudioFake):
    PATH = "/v1/audio/speech"
    BODY_TYPE = "application/json"
    WRONG_BODY = "Expected a JSON body."
    UNPARSED = "We could not parse the JSON body of your request."

    def __init__(
        self,
        *,
        api_key: str | None = None,
        models: tuple[str, ...] = MODELS,
        max_input: int = MAX_INPUT,
    ) -> None:
        self.models = models
        self.max_input = max_input
        """OpenAI's limit; lower stands for a compatible server with a lower one."""
        self.requests: list[SpeechCall] = []
        self.refusals: list[dict[str, Any]] = []
        """The error bodies sent, in order."""
        super().__init__(api_key)

    async def _serve(self, request: HttpRequest) -> Outcome:
        outcome = self._answer(request)
        if outcome.status != 200 and isinstance(outcome.payload, dict):
            self.refusals.append(outcome.payload)
        return outcome

    def _answer(self, request: HttpRequest) -> Outcome:
        admitted = self.admitted(request)
        return admitted if isinstance(admitted, Outcome) else self._speak(*admitted)

    def _speak(self, params: dict[str, Any], authorization: str) -> Outcome:
        for name in ("model", "input", "voice"):
            if not isinstance(params.get(name), str):
                return error(400, f"Missing required parameter: '{name}'.", param=name)
        model, text, voice = params["model"], params["input"], params["voice"]
        limit = self.max_input
        if len(text) > limit:
            message = (
                f"[{{'type': 'string_too_long', 'loc': ('body', 'input'), 'msg': 'String "
                f"should have at most {limit} characters', 'input': {text!r}, 'ctx': "
                f"{{'max_length': {limit}}}}}]"
            )
            return error(400, message)
        if voice not in VOICES:
            return error(
                400,
                f"Invalid value: '{voice}'. Supported values are: {_listed(VOICES)}.",
                param="voice",
                code="invalid_value",
            )
        response_format = params.get("response_format", "mp3")
        if response_format not in FORMATS:
            return error(
                400,
                f"Invalid value: '{response_format}'. Supported values are: {_listed(FORMATS)}.",
                param="response_format",
                code="invalid_value",
            )
        speed = params.get("speed", 1.0)
        if isinstance(speed, bool) or not isinstance(speed, int | float) or not 0.25 <= speed <= 4:
            return error(400, f"{speed!r} is not a speed between 0.25 and 4.0.", param="speed")
        if model not in self.models:
            return error(
                404,
                f"The model `{model}` does not exist or you do not have access to it.",
                code="model_not_found",
            )
        self.requests.append(SpeechCall(model, voice, text, response_format, authorization))
        return Outcome(
            "answer", 200, raw=audio_of(response_format), raw_type=CONTENT_TYPES[response_format]
        )
