"""The embedder ``[memory.embeddings]`` asks for."""

from __future__ import annotations

import os
from collections.abc import Mapping

import structlog

from thalos_bot.config.memory import EmbeddingSettings
from thalos_bot.memory.embedding.base import Embedder
from thalos_bot.memory.embedding.endpoint import KEY_VARIABLE, EndpointEmbedder
from thalos_bot.memory.embedding.local import LocalModelEmbedder
from thalos_bot.memory.embedding.null import NullEmbedder
from thalos_bot.memory.embedding.wordllama import WordLlamaEmbedder, installed

log = structlog.get_logger(__name__)


def build_embedder(
    settings: EmbeddingSettings, environ: Mapping[str, str] | None = None
) -> Embedder:
    """``mode = "embedded"`` (WordLlama, the default), ``"local"``, ``"endpoint"`` or
    ``"off"``. An
    embedded mode without the package installed degrades to keyword-only recall."""
    environ = os.environ if environ is None else environ
    if settings.mode == "off":
        return NullEmbedder()
    if settings.mode == "local":
        return LocalModelEmbedder(settings.folder())
    if settings.mode == "endpoint":
        assert settings.base_url is not None  # checked by the settings model
        return EndpointEmbedder(
            settings.base_url,
            settings.model or "",
            dimensions=settings.dimensions,
            api_key=environ.get(KEY_VARIABLE) or None,
            timeout=settings.timeout_seconds,
        )
    if not installed():
        log.warning("memory-embedder-missing", embedder="wordllama")
        return NullEmbedder()
    return WordLlamaEmbedder()
