"""A sentence-transformers model from a folder on this machine, run on the CPU.

``mode = "local"`` with ``path`` naming a folder such as a copy of
``sentence-transformers/all-MiniLM-L6-v2``: ``config.json``, ``model.safetensors``,
``tokenizer.json`` and, when present, ``sentence_bert_config.json`` (its
``max_seq_length``) and ``1_Pooling/config.json`` (mean or CLS pooling; mean when the
file is absent). The
encoder is :mod:`.bert` (numpy); the tokenizer is the folder's own ``tokenizer.json``
read by ``tokenizers``. Nothing is downloaded and no service runs: the folder is the
whole model.

The vector space is named by the folder's name, its width and a fingerprint of its
files, so replacing the weights in the same folder reindexes rather than mixing two
models' vectors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import numpy as np

from thalos_bot.memory.embedding.base import EmbedderError, Vectors
from thalos_bot.memory.embedding.bert import BertEncoder, BertShape, read_json_object

DEFAULT_MAX_TOKENS = 256
BATCH = 32
"""Texts per forward pass while reindexing (padded to the longest of the batch)."""
INLINE_BATCH = 1
"""A single short text (a recall query, one remembered fact) is embedded on the event
loop: a few milliseconds, less than a worker thread's round trip costs under load."""
INLINE_CHARS = 400
FINGERPRINT_BYTES = 1 << 20
"""The fingerprint hashes the weights' first and last MiB and their size: cheap at
start-up, and different for any two trained models."""
REQUIRED = ("config.json", "model.safetensors", "tokenizer.json")


class LocalModelEmbedder:
    available = True

    def __init__(self, folder: Path, *, max_tokens: int | None = None) -> None:
        self._folder = folder
        self._shape = check_folder(folder)
        self._pooling = pooling_of(folder)
        self._max_tokens = min(
            max_tokens or _max_seq_length(folder) or DEFAULT_MAX_TOKENS,
            self._shape.max_positions,
        )
        self._model = f"local/{folder.name}/{self._shape.hidden}/{_fingerprint(folder)}"
        self._parts: tuple[BertEncoder, Any] | None = None
        """The encoder and the tokenizer, once loaded."""
        self._lock = anyio.Lock()

    @property
    def model(self) -> str:
        return self._model

    @property
    def dimensions(self) -> int:
        return self._shape.hidden

    async def load(self) -> None:
        """Load the weights now (otherwise the first embed does, in a worker thread)."""
        await self._loaded()

    async def _loaded(self) -> tuple[BertEncoder, Any]:
        async with self._lock:
            if self._parts is None:
                self._parts = await anyio.to_thread.run_sync(self._load)
            return self._parts

    def _load(self) -> tuple[BertEncoder, Any]:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        try:
            tensors = load_file(str(self._folder / "model.safetensors"))
        except Exception as exc:  # safetensors raises its own exception class too
            raise EmbedderError(
                f"{self._folder / 'model.safetensors'}: cannot load ({type(exc).__name__})"
            ) from exc
        try:
            tokenizer = Tokenizer.from_file(str(self._folder / "tokenizer.json"))
        except Exception as exc:  # tokenizers raises its own untyped exception class
            raise EmbedderError(
                f"{self._folder / 'tokenizer.json'}: cannot load ({type(exc).__name__})"
            ) from exc
        tokenizer.no_padding()
        tokenizer.enable_truncation(self._max_tokens)
        return BertEncoder(self._shape, tensors), tokenizer

    async def embed(self, texts: Sequence[str]) -> Vectors:
        encoder, tokenizer = await self._loaded()
        batch = list(texts)
        if not batch:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        if len(batch) <= INLINE_BATCH and len(batch[0]) <= INLINE_CHARS:
            return _encode(encoder, tokenizer, batch, self._pooling)
        return await anyio.to_thread.run_sync(
            lambda: _encode_all(encoder, tokenizer, batch, self._pooling)
        )

    async def aclose(self) -> None:
        return None


def check_folder(folder: Path) -> BertShape:
    """What a folder must hold for this embedder; raises :class:`EmbedderError` naming
    the file that is missing or wrong (the weights are only read when first used)."""
    if not folder.is_dir():
        raise EmbedderError(f"{folder}: not a folder")
    for name in REQUIRED:
        if not (folder / name).is_file():
            raise EmbedderError(f"{folder / name}: missing (a sentence-transformers folder)")
    shape = BertShape.from_config(folder / "config.json")
    pooling_of(folder)
    _max_seq_length(folder)
    return shape


def _encode_all(encoder: BertEncoder, tokenizer: Any, texts: list[str], pooling: str) -> Vectors:
    # Sorting by length keeps the padding of each batch small.
    order = sorted(range(len(texts)), key=lambda n: len(texts[n]))
    out = np.zeros((len(texts), encoder.dimensions), dtype=np.float32)
    for start in range(0, len(order), BATCH):
        chunk = order[start : start + BATCH]
        out[chunk] = _encode(encoder, tokenizer, [texts[n] for n in chunk], pooling)
    return out


def _encode(encoder: BertEncoder, tokenizer: Any, texts: list[str], pooling: str) -> Vectors:
    encodings = tokenizer.encode_batch(texts)
    length = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(texts), length), dtype=np.int64)
    mask = np.zeros((len(texts), length), dtype=np.int64)
    for row, encoding in enumerate(encodings):
        ids[row, : len(encoding.ids)] = encoding.ids
        mask[row, : len(encoding.ids)] = 1
    return encoder.encode(ids, mask, pooling=pooling)


def _max_seq_length(folder: Path) -> int | None:
    config = _json(folder / "sentence_bert_config.json")
    value = config.get("max_seq_length") if config else None
    return value if isinstance(value, int) and value > 0 else None


POOLINGS = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}


def pooling_of(folder: Path) -> str:
    """``mean`` or ``cls``, from ``1_Pooling/config.json`` (``mean`` without one)."""
    path = folder / "1_Pooling" / "config.json"
    config = _json(path)
    if config is None:
        return "mean"
    chosen = [key for key, value in config.items() if key.startswith("pooling_mode_") and value]
    if len(chosen) != 1 or chosen[0] not in POOLINGS:
        raise EmbedderError(f"{path}: only one of mean or CLS pooling is supported, got {chosen}")
    return POOLINGS[chosen[0]]


def _json(path: Path) -> dict[str, Any] | None:
    return read_json_object(path) if path.is_file() else None


def _fingerprint(folder: Path) -> str:
    digest = hashlib.sha256()
    weights = folder / "model.safetensors"
    size = weights.stat().st_size
    digest.update(str(size).encode())
    with weights.open("rb") as file:
        digest.update(file.read(FINGERPRINT_BYTES))
        file.seek(max(0, size - FINGERPRINT_BYTES))
        digest.update(file.read(FINGERPRINT_BYTES))
    digest.update((folder / "tokenizer.json").read_bytes())
    return digest.hexdigest()[:12]
