"""What OpenAI's audio endpoints (``/v1/audio/transcriptions``, ``/v1/audio/speech``)
share, for their fakes: the error body, and the checks every request passes first (the
path, the Bearer key, the body's type and its parsing), with OpenAI's texts."""

from __future__ import annotations

from typing import Any

from tests.fakes.telegram_http import BadHttpRequestError, HttpRequest
from tests.fakes.telegram_server import Outcome, ServedFake


def error(
    status: int, message: str, *, param: str | None = None, code: str | None = None
) -> Outcome:
    body = {
        "error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    }
    return Outcome("answer", status, body)


class AudioFake(ServedFake):
    """``api_key``: the key a request must carry (None: any, or none)."""

    PATH = ""
    BODY_TYPE = ""
    """The content type the endpoint takes."""
    WRONG_BODY = ""
    """The text for a body of another type."""
    UNPARSED = ""
    """OpenAI's text for a body of that type it cannot parse."""

    def __init__(self, api_key: str | None) -> None:
        self.api_key = api_key
        super().__init__()

    def admitted(self, request: HttpRequest) -> tuple[dict[str, Any], str] | Outcome:
        """The request's parameters and Authorization header, or OpenAI's refusal."""
        if request.method != "POST" or request.path.rstrip("/") != self.PATH:
            return error(404, f"Invalid URL ({request.method} {request.path})")
        authorization = request.headers.get("authorization", "")
        if self.api_key is not None:
            if not authorization.startswith("Bearer "):
                return error(401, "You didn't provide an API key.")
            if authorization.removeprefix("Bearer ") != self.api_key:
                return error(401, "Incorrect API key provided.", code="invalid_api_key")
        if not request.headers.get("content-type", "").startswith(self.BODY_TYPE):
            return error(400, self.WRONG_BODY)
        try:
            return request.params(), authorization
        except BadHttpRequestError:
            return error(400, self.UNPARSED)
