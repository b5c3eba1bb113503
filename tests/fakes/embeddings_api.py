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
        fake.hold_after(1)           # answer one more request, park the ones after it
        fake.wait_for(lambda: fake.parked == 1)
        fake.release()               # let one parked request (or the next one) through
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
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
        self._gate = threading.Condition()
        self._allowance: int | None = None
        self.parked = 0
        """Requests waiting at the gate (see :meth:`hold_after`)."""
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

    def hold_after(self, count: int) -> None:
        """Answer ``count`` more valid requests, then park each later one (it waits,
        unanswered, as a slow endpoint would) until :meth:`release` lets it through."""
        with self._gate:
            self._allowance = count
            self._gate.notify_all()

    def release(self, count: int = 1) -> None:
        """Let ``count`` more requests through the gate."""
        with self._gate:
            self._allowance = (self._allowance or 0) + count
            self._gate.notify_all()

    def open_gate(self) -> None:
        """No more holding: every request is answered at once."""
        with self._gate:
            self._allowance = None
            self._gate.notify_all()

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 60.0) -> None:
        """Block until ``predicate()`` holds (checked whenever the gate moves)."""
        with self._gate:
            if not self._gate.wait_for(predicate, timeout):
                raise TimeoutError("the embeddings fake never got there")

    def _pass_gate(self) -> None:
        def open_for_one() -> bool:
            return self._allowance is None or self._allowance > 0

        with self._gate:
            if not open_for_one():
                self.parked += 1
                self._gate.notify_all()
                self._gate.wait_for(open_for_one)
                self.parked -= 1
            if self._allowance is not None:
                self._allowance -= 1
            self._gate.notify_all()

    def __enter__(self) -> EmbeddingsFake:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.open_gate()
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
        self._pass_gate()
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
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    return  # the client hung up while its request was parked

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return None

        return Handler
