"""The embedder a memory bench runs with: ``wordllama``, ``none`` or ``local:PATH`` (a
sentence-transformers BERT folder, as ``[memory.embeddings] mode = "local"``)."""

from __future__ import annotations

from pathlib import Path

from thalos_bot.memory.embedding.base import Embedder
from thalos_bot.memory.embedding.local import LocalModelEmbedder
from thalos_bot.memory.embedding.wordllama import WordLlamaEmbedder

HELP = "wordllama (default), none (BM25 only) or local:PATH (a sentence-transformers folder)"


def make_embedder(name: str) -> Embedder | None:
    if name == "wordllama":
        return WordLlamaEmbedder()
    if name == "none":
        return None
    if name.startswith("local:"):
        return LocalModelEmbedder(Path(name.removeprefix("local:")).expanduser())
    raise SystemExit(f"--embedder: {name!r} is not {HELP}")
