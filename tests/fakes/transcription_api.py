"""A local OpenAI-compatible ``POST /v1/audio/transcriptions`` endpoint, as strict as
OpenAI's documented API, for tests over real sockets.

    with TranscriptionFake(api_key="sk-test", transcript="hello there") as fake:
        base_url = fake.base_url            # ends in /v1, like OpenAI's

Refused as OpenAI refuses (status, ``{"error": {"message", "type", "param", "code"}}``):
no ``Authorization: Bearer`` key (401), a wrong key (401 ``invalid_api_key``), a body
that is not multipart/form-data or lacks ``file`` or ``model`` (400), a file whose name
has no supported extension (400 "Invalid file format. Supported formats: [...]"), a file
over 25 MB (413), an unknown ``response_format`` (400). ``requests`` lists what came.

``body`` stands for an OpenAI-compatible server that misbehaves: it answers an accepted
request 200 with that JSON value (an array, a string, a number) instead of
``{"text": ...}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.fakes.openai_audio import AudioFake, error
from tests.fakes.telegram_http import HttpRequest
from tests.fakes.telegram_server import Outcome

SUPPORTED = ("flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm")
RESPONSE_FORMATS = ("json", "text", "srt", "verbose_json", "vtt")
MAX_BYTES = 25 * 1024 * 1024


@dataclass(frozen=True)
class TranscriptionCall:
    model: str
    filename: str
    size: int
    authorization: str
    language: str | None


class TranscriptionFake(AudioFake):
    PATH = "/v1/audio/transcriptions"
    BODY_TYPE = "multipart/form-data"
    WRONG_BODY = "Expected a multipart/form-data body."
    UNPARSED = "Could not parse multipart form"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        transcript: str = "hello from the fake",
        body: object = None,
    ) -> None:
        self.transcript = transcript
        self.body = body
        self.requests: list[TranscriptionCall] = []
        super().__init__(api_key)

    async def _serve(self, request: HttpRequest) -> Outcome:
        admitted = self.admitted(request)
        return admitted if isinstance(admitted, Outcome) else self._transcribe(*admitted)

    def _transcribe(self, params: dict[str, Any], authorization: str) -> Outcome:
        file = params.get("file")
        model = params.get("model")
        if not isinstance(file, dict):
            return error(400, "you must provide a file parameter", param="file")
        if not isinstance(model, str) or not model:
            return error(400, "you must provide a model parameter", param="model")
        name = str(file.get("filename", ""))
        extension = name.rsplit(".", 1)[-1].lower() if "." in name else ""
        if extension not in SUPPORTED:
            listed = ", ".join(repr(s) for s in SUPPORTED)
            return error(400, f"Invalid file format. Supported formats: [{listed}]")
        size = int(file.get("size", 0))
        if size > MAX_BYTES:
            return error(
                413, f"Maximum content size limit ({MAX_BYTES}) exceeded ({size} bytes read)"
            )
        response_format = params.get("response_format", "json")
        if response_format not in RESPONSE_FORMATS:
            return error(
                400, f"Invalid response_format: {response_format!r}", param="response_format"
            )
        language = params.get("language")
        self.requests.append(
            TranscriptionCall(
                model, name, size, authorization, language if isinstance(language, str) else None
            )
        )
        if self.body is not None:
            raw = json.dumps(self.body).encode("utf-8")
            return Outcome("answer", 200, raw=raw, raw_type="application/json")
        return Outcome("answer", 200, {"text": self.transcript})
