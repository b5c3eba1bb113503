"""A local fake of OpenAI's ``POST /v1/embeddings``, for tests of the endpoint embedder.

A threaded HTTP server on ``127.0.0.1`` (ephemeral port). It is as strict as the real
endpoint about what it documents as invalid: a missing or wrong key (401), a body that
is not JSON, a missing or unknown model, missing or empty input, too many inputs, an
unknown ``encoding_format``, ``dimensions`` for a model that has no such option or out
of range (400), each with an OpenAI-style error object. Vectors are real: the bundled
WordLlama model embeds the text (truncated to ``dimensions`` and renormalized, which
that model is trained for), so recall through the fake finds things by meaning::

    with EmbeddingsFake(api_key="sk-test") as fake:
        embedder = EndpointEmbedder(fake.base_url, "text-embedding-3-small", api_key="sk-test")
        fake.fail_next(503)          # the next request answers 503 (an outage)
        fake.down = True             # every request answers 503 until cleared
        fake.requests                # parsed JSON bodies received
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import numpy as np

MODELS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
"""Model → native size. Only the text-embedding-3 models accept ``dimensions``."""
MAX_INPUTS = 2048
INNER_DIMENSIONS = 256


def _error(message: str, kind: str = "invalid_request_error", param: str | None = None) -> Any:
    return {"error": {"message": message, "type": kind, "param": param, "code": None}}


class EmbeddingsFake:
    def __init__(self, api_key: str = "sk-embed-test") -> None:
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.down = False
        self._fail: list[int] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        from wordllama import WordLlama  # type: ignore[import-untyped]

        from thalos_bot.memory.embedding.wordllama import package_folder

        self._model = WordLlama.load(cache_dir=package_folder(), disable_download=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def fail_next(self, status: int) -> None:
        with self._lock:
            self._fail.append(status)

    def __enter__(self) -> EmbeddingsFake:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- the endpoint ---------------------------------------------------------------

    def answer(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, Any]:
        if path != "/v1/embeddings":
            return 404, _error(f"Invalid URL (POST {path})")
        with self._lock:
            if self.down or self._fail:
                status = self._fail.pop(0) if self._fail else 503
                return status, _error("The server is overloaded or not ready yet.", "server_error")
        auth = headers.get("authorization", "")
        if not auth.startswith("Bearer "):
            return 401, _error(
                "You didn't provide an API key. You need to provide your API key in an"
                " Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
            )
        if auth.removeprefix("Bearer ") != self.api_key:
            return 401, _error(
                "Incorrect API key provided: sk-****. You can find your API key at"
                " https://platform.openai.com/account/api-keys."
            )
        try:
            body = json.loads(raw)
        except ValueError:
            return 400, _error("We could not parse the JSON body of your request.")
        if not isinstance(body, dict):
            return 400, _error("We could not parse the JSON body of your request.")
        self.requests.append(body)
        return self._embed(body)

    def _embed(self, body: dict[str, Any]) -> tuple[int, Any]:
        model = body.get("model")
        if not model:
            return 400, _error("you must provide a model parameter")
        if model not in MODELS:
            return 404, _error(
                f"The model `{model}` does not exist or you do not have access to it.",
                param="model",
            )
        texts = body.get("input")
        if texts is None:
            return 400, _error("'input' is a required property", param="input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or len(texts) > MAX_INPUTS:
            return 400, _error(
                "'$.input' is invalid. Please check the API reference.", param="input"
            )
        if any(not isinstance(t, str) or not t for t in texts):
            return 400, _error(
                "'$.input' is invalid. Please check the API reference.", param="input"
            )
        encoding = body.get("encoding_format", "float")
        if encoding not in ("float", "base64"):
            return 400, _error(
                f"'{encoding}' is not one of ['float', 'base64'] - 'encoding_format'",
                param="encoding_format",
            )
        dimensions = body.get("dimensions")
        if dimensions is not None:
            if not str(model).startswith("text-embedding-3"):
                return 400, _error(
                    "This model does not support specifying dimensions.", param="dimensions"
                )
            if not isinstance(dimensions, int) or dimensions < 1:
                return 400, _error(
                    f"{dimensions} is less than the minimum of 1 - 'dimensions'", param="dimensions"
                )
        size = min(dimensions or INNER_DIMENSIONS, INNER_DIMENSIONS)
        vectors = np.asarray(self._model.embed(texts, norm=False), dtype=np.float32)[:, :size]
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
        data = [
            {"object": "embedding", "index": i, "embedding": [round(float(x), 6) for x in v]}
            for i, v in enumerate(vectors)
        ]
        tokens = sum(len(t.split()) for t in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return 200, {"object": "list", "data": data, "model": model, "usage": usage}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, payload = fake.answer(self.path, headers, raw)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return None

        return Handler
