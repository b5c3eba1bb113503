"""An OpenAI-compatible ``POST {base_url}/embeddings`` endpoint (OpenAI, or a local
server speaking its shape). The key comes from ``THALOS_EMBEDDINGS_API_KEY`` and never
reaches a log line or an error text; neither does the embedded text."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx2
import numpy as np

from thalos_bot.memory.embedding.base import EmbedderError, Vectors, normalized

KEY_VARIABLE = "THALOS_EMBEDDINGS_API_KEY"
MAX_BATCH = 256
"""Inputs per request (OpenAI accepts up to 2048)."""


class EndpointEmbedder:
    available = True

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        dimensions: int | None = None,
        api_key: str | None = None,
        timeout: float = 10.0,
        client: httpx2.AsyncClient | None = None,
    ) -> None:
        self._url = base_url.rstrip("/") + "/embeddings"
        self._model = model
        self._dimensions = dimensions
        headers = {"content-type": "application/json"}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        self._client = client or httpx2.AsyncClient(timeout=timeout, headers=headers)
        self._owns_client = client is None
        self._seen_dimensions: int | None = dimensions

    @property
    def model(self) -> str:
        suffix = f"/{self._dimensions}" if self._dimensions else ""
        return f"endpoint/{self._model}{suffix}"

    @property
    def dimensions(self) -> int:
        return self._seen_dimensions or 0

    async def embed(self, texts: Sequence[str]) -> Vectors:
        batch = list(texts)
        if not batch:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        parts = [
            await self._request(batch[i : i + MAX_BATCH]) for i in range(0, len(batch), MAX_BATCH)
        ]
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    async def _request(self, batch: list[str]) -> Vectors:
        body: dict[str, Any] = {"model": self._model, "input": batch, "encoding_format": "float"}
        if self._dimensions:
            body["dimensions"] = self._dimensions
        try:
            response = await self._client.post(self._url, content=json.dumps(body))
        except httpx2.HTTPError as exc:
            raise EmbedderError(f"embeddings endpoint unreachable: {type(exc).__name__}") from exc
        if response.status_code != 200:
            raise EmbedderError(f"embeddings endpoint answered HTTP {response.status_code}")
        try:
            data = response.json()["data"]
            ordered = sorted(data, key=lambda item: int(item["index"]))
            matrix = np.asarray([item["embedding"] for item in ordered], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbedderError("embeddings endpoint sent a malformed reply") from exc
        if matrix.ndim != 2 or matrix.shape[0] != len(batch):
            raise EmbedderError("embeddings endpoint sent the wrong number of vectors")
        if self._seen_dimensions is None:
            self._seen_dimensions = int(matrix.shape[1])
        elif matrix.shape[1] != self._seen_dimensions:
            raise EmbedderError("embeddings endpoint changed its vector size")
        return normalized(matrix)

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()
