"""The embedded default: WordLlama, whose weights and tokenizer ship inside its wheel.

WordLlama 0.4 looks for the bundled tokenizer in the wrong folder and then tries to
download it; pointing ``cache_dir`` at the installed package's own folder, with
downloads disabled, finds both bundled files offline. Loading is lazy (on the first
embed, about 0.2 s in a worker thread) and never touches the network: a missing file
is an :class:`EmbedderError`, not a download.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.to_thread
import numpy as np

from thalos_bot.memory.embedding.base import EmbedderError, Vectors, normalized

DEFAULT_CONFIG = "l2_supercat"
DEFAULT_DIMENSIONS = 256
INLINE_BATCH = 8
"""Up to this many texts are embedded on the event loop (microseconds each); larger
batches (reindexing) go to a worker thread."""


class _Model(Protocol):
    def embed(self, texts: list[str], norm: bool = ...) -> Any: ...


_LOADED: dict[tuple[str, int], _Model] = {}
"""Models already loaded in this process (read-only once loaded, so shared)."""


def package_folder() -> Path | None:
    """Where the installed ``wordllama`` package lives (its bundled files are there)."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def installed() -> bool:
    return package_folder() is not None


class WordLlamaEmbedder:
    available = True

    def __init__(self, config: str = DEFAULT_CONFIG, dimensions: int = DEFAULT_DIMENSIONS):
        self._config = config
        self._dimensions = dimensions
        self._model: _Model | None = None
        self._lock = anyio.Lock()

    @property
    def model(self) -> str:
        return f"wordllama/{self._config}/{self._dimensions}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    async def load(self) -> None:
        """Load the bundled model now (it is otherwise loaded by the first embed)."""
        await self._loaded()

    async def _loaded(self) -> _Model:
        async with self._lock:
            if self._model is None:
                key = (self._config, self._dimensions)
                if key not in _LOADED:
                    _LOADED[key] = await anyio.to_thread.run_sync(self._load)
                self._model = _LOADED[key]
            return self._model

    def _load(self) -> _Model:
        folder = package_folder()
        if folder is None:
            raise EmbedderError("the wordllama package is not installed")
        try:
            from wordllama import WordLlama  # type: ignore[import-untyped]

            model: _Model = WordLlama.load(
                config=self._config,
                cache_dir=folder,
                dim=self._dimensions,
                disable_download=True,
            )
        except (OSError, ValueError, RuntimeError) as exc:
            raise EmbedderError(f"wordllama could not load: {type(exc).__name__}") from exc
        return model

    async def embed(self, texts: Sequence[str]) -> Vectors:
        model = await self._loaded()
        batch = list(texts)
        if not batch:
            return np.zeros((0, self._dimensions), dtype=np.float32)
        if len(batch) <= INLINE_BATCH:
            raw = model.embed(batch, norm=False)
        else:
            raw = await anyio.to_thread.run_sync(lambda: model.embed(batch, norm=False))
        return normalized(np.asarray(raw))

    async def aclose(self) -> None:
        return None
