"""A BERT sentence encoder's forward pass in numpy: no torch, no download, no service.

It runs the encoder of a sentence-transformers model folder (``config.json`` with
``model_type = "bert"``, ``model.safetensors``) and pools it the way such models are
trained to be used: the mean of the token states under the attention mask (MiniLM,
mpnet-style models) or the first token's state (bge-style), scaled to unit length.
Only inference is needed, so dropout is gone and every layer is a handful of matrix
products; the query, key and value projections are fused into one.

Inputs of one batch are padded to the longest and masked, so a batch gives the same
vectors as its texts one by one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from thalos_bot.memory.embedding.base import EmbedderError

Matrix = npt.NDArray[np.float32]
PREFIXES = ("", "bert.")
"""Tensor names appear bare (sentence-transformers export) or under ``bert.``."""


@dataclass(frozen=True, slots=True)
class BertShape:
    hidden: int
    layers: int
    heads: int
    layer_norm_eps: float
    max_positions: int

    @classmethod
    def from_config(cls, path: Path) -> BertShape:
        """Read ``config.json``; anything this encoder cannot run is named."""
        config = read_json_object(path)
        if config.get("model_type") != "bert":
            raise EmbedderError(f"{path}: model_type {config.get('model_type')!r} is not 'bert'")
        if config.get("hidden_act", "gelu") != "gelu":
            raise EmbedderError(f"{path}: hidden_act {config.get('hidden_act')!r} is not 'gelu'")
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise EmbedderError(f"{path}: only absolute position embeddings are supported")
        try:
            shape = cls(
                hidden=int(config["hidden_size"]),
                layers=int(config["num_hidden_layers"]),
                heads=int(config["num_attention_heads"]),
                layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)),
                max_positions=int(config.get("max_position_embeddings", 512)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbedderError(f"{path}: missing or bad key {exc}") from exc
        if shape.heads <= 0 or shape.hidden % shape.heads:
            raise EmbedderError(f"{path}: hidden_size is not a multiple of num_attention_heads")
        return shape


def read_json_object(path: Path) -> dict[str, Any]:
    """A model folder's JSON file, which must hold an object."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbedderError(f"{path}: cannot read ({type(exc).__name__})") from exc
    if not isinstance(value, dict):
        raise EmbedderError(f"{path}: expected a JSON object")
    return value


@dataclass(frozen=True, slots=True)
class _Layer:
    qkv: Matrix
    qkv_bias: Matrix
    out: Matrix
    out_bias: Matrix
    norm1: tuple[Matrix, Matrix]
    up: Matrix
    up_bias: Matrix
    down: Matrix
    down_bias: Matrix
    norm2: tuple[Matrix, Matrix]


class BertEncoder:
    """The encoder with its weights, ready to embed batches of token ids."""

    def __init__(self, shape: BertShape, tensors: Mapping[str, npt.NDArray[Any]]) -> None:
        self.shape = shape
        take = _Taker(tensors)
        self._words = take("embeddings.word_embeddings.weight")
        self._positions = take("embeddings.position_embeddings.weight")
        self._types = take("embeddings.token_type_embeddings.weight")[0]
        self._norm = take.norm("embeddings.LayerNorm")
        self._layers = [self._layer(take, f"encoder.layer.{n}.") for n in range(shape.layers)]
        if self._words.shape[1] != shape.hidden:
            raise EmbedderError("the word embeddings do not match hidden_size")

    @staticmethod
    def _layer(take: _Taker, p: str) -> _Layer:
        names = ("query", "key", "value")
        return _Layer(
            qkv=np.concatenate([take(f"{p}attention.self.{n}.weight") for n in names]).T.copy(),
            qkv_bias=np.concatenate([take(f"{p}attention.self.{n}.bias") for n in names]),
            out=take(f"{p}attention.output.dense.weight").T.copy(),
            out_bias=take(f"{p}attention.output.dense.bias"),
            norm1=take.norm(f"{p}attention.output.LayerNorm"),
            up=take(f"{p}intermediate.dense.weight").T.copy(),
            up_bias=take(f"{p}intermediate.dense.bias"),
            down=take(f"{p}output.dense.weight").T.copy(),
            down_bias=take(f"{p}output.dense.bias"),
            norm2=take.norm(f"{p}output.LayerNorm"),
        )

    @property
    def dimensions(self) -> int:
        return self.shape.hidden

    def encode(
        self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64], *, pooling: str = "mean"
    ) -> Matrix:
        """``(batch, tokens)`` ids and attention mask → ``(batch, hidden)`` unit vectors:
        the mean of the unmasked token states (``pooling="mean"``) or the first token's
        (``"cls"``)."""
        batch, length = ids.shape
        if length > self.shape.max_positions:
            raise EmbedderError(f"{length} tokens is more than the model's positions")
        heads = self.shape.heads
        head = self.shape.hidden // heads
        x = self._words[ids] + self._positions[:length] + self._types
        x = self._layer_norm(x, self._norm)
        blocked = np.where(mask[:, None, None, :] > 0, 0.0, -1e9).astype(np.float32)
        scale = np.float32(1.0 / np.sqrt(head))
        for layer in self._layers:
            # Dense layers on (batch * tokens, hidden): one matrix product each.
            flat = x.reshape(batch * length, -1)
            qkv = (flat @ layer.qkv + layer.qkv_bias).reshape(batch, length, 3, heads, head)
            q, k, v = (qkv[:, :, n].transpose(0, 2, 1, 3) for n in range(3))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + blocked
            scores -= scores.max(axis=-1, keepdims=True)
            weights = np.exp(scores)
            weights /= weights.sum(axis=-1, keepdims=True)
            context = (weights @ v).transpose(0, 2, 1, 3).reshape(batch * length, -1)
            flat = self._layer_norm(flat + context @ layer.out + layer.out_bias, layer.norm1)
            inner = _gelu(flat @ layer.up + layer.up_bias)
            flat = self._layer_norm(flat + inner @ layer.down + layer.down_bias, layer.norm2)
            x = flat.reshape(batch, length, -1)
        if pooling == "cls":
            pooled = x[:, 0, :]
        else:
            weight = mask.astype(np.float32)[:, :, None]
            pooled = (x * weight).sum(axis=1) / np.maximum(weight.sum(axis=1), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        result: Matrix = (pooled / norms).astype(np.float32, copy=False)
        return result

    def _layer_norm(self, x: Matrix, norm: tuple[Matrix, Matrix]) -> Matrix:
        mean = x.mean(axis=-1, keepdims=True)
        centred = x - mean
        variance = (centred * centred).mean(axis=-1, keepdims=True)
        out: Matrix = centred / np.sqrt(variance + self.shape.layer_norm_eps) * norm[0] + norm[1]
        return out


class _Taker:
    """Tensors by name, as float32, with the name of any that is missing."""

    def __init__(self, tensors: Mapping[str, npt.NDArray[Any]]) -> None:
        self._tensors = tensors

    def __call__(self, name: str) -> Matrix:
        for prefix in PREFIXES:
            found = self._tensors.get(prefix + name)
            if found is not None:
                return np.ascontiguousarray(found, dtype=np.float32)
        raise EmbedderError(f"model.safetensors has no tensor {name!r}")

    def norm(self, name: str) -> tuple[Matrix, Matrix]:
        return self(f"{name}.weight"), self(f"{name}.bias")


ERF_P = np.float32(0.3275911)
ERF_A = tuple(np.float32(a) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736))
ERF_A1 = np.float32(0.254829592)
ROOT_HALF = np.float32(1.0 / np.sqrt(2.0))


def _gelu(x: Matrix) -> Matrix:
    """GELU with the error function, as BERT defines it. numpy has no ``erf``: this is
    Abramowitz and Stegun 7.1.26 (within 1.5e-7 of it), computed in place in float32,
    because on the widest activations it costs as much as a matrix product."""
    z = np.abs(x)
    z *= ROOT_HALF
    t = z * ERF_P
    t += 1
    np.reciprocal(t, out=t)
    poly = t * ERF_A[0]
    for a in ERF_A[1:]:
        poly += a
        poly *= t
    poly += ERF_A1
    poly *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z  # now 1 - erf(|x| / sqrt 2)
    np.subtract(1, poly, out=poly)
    np.copysign(poly, x, out=poly)  # erf(x / sqrt 2)
    poly += 1
    poly *= x
    poly *= np.float32(0.5)
    return poly
