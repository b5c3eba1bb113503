"""A tiny sentence-transformers BERT folder with random weights, written by the test
that needs it, and an encoder written as plainly as the papers define it (token by
token, head by head, the exact error function) to check the numpy one against."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import numpy.typing as npt
from safetensors.numpy import save_file
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

WORDS = [
    "sam",
    "drinks",
    "jasmine",
    "tea",
    "every",
    "morning",
    "the",
    "dog",
    "is",
    "a",
    "border",
    "collie",
    "called",
    "pepper",
    "renews",
    "car",
    "tax",
    "in",
    "march",
    "what",
    "hot",
    "drink",
    "do",
    "i",
    "have",
    "when",
    "wake",
    "up",
    "who",
    "walks",
    "my",
    "pet",
]
HIDDEN, HEADS, LAYERS, INNER, POSITIONS = 16, 2, 2, 32, 64
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]


def write_tiny_bert(
    folder: Path, *, seed: int = 7, prefix: str = "", pooling: str | None = "mean"
) -> dict[str, npt.NDArray[np.float32]]:
    """Write the folder; returns its tensors (bare names)."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = {token: n for n, token in enumerate([*SPECIAL, *dict.fromkeys(WORDS)])}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    # Real model folders often ship with fixed-length padding switched on.
    tokenizer.enable_padding(length=POSITIONS, pad_id=0, pad_token="[PAD]")
    tokenizer.save(str(folder / "tokenizer.json"))
    config = {
        "model_type": "bert",
        "hidden_size": HIDDEN,
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "intermediate_size": INNER,
        "max_position_embeddings": POSITIONS,
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-12,
        "vocab_size": len(vocab),
    }
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 48}))
    if pooling is not None:
        (folder / "1_Pooling").mkdir(exist_ok=True)
        (folder / "1_Pooling" / "config.json").write_text(
            json.dumps(
                {
                    "word_embedding_dimension": HIDDEN,
                    "pooling_mode_cls_token": pooling == "cls",
                    "pooling_mode_mean_tokens": pooling == "mean",
                    "pooling_mode_max_tokens": pooling == "max",
                }
            )
        )
    tensors = _random_tensors(len(vocab), seed)
    save_file({prefix + k: v for k, v in tensors.items()}, str(folder / "model.safetensors"))
    return tensors


def _random_tensors(vocab: int, seed: int) -> dict[str, npt.NDArray[np.float32]]:
    rng = np.random.default_rng(seed)

    def r(*shape: int) -> npt.NDArray[np.float32]:
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    out = {
        "embeddings.word_embeddings.weight": r(vocab, HIDDEN),
        "embeddings.position_embeddings.weight": r(POSITIONS, HIDDEN),
        "embeddings.token_type_embeddings.weight": r(2, HIDDEN),
        "embeddings.LayerNorm.weight": 1 + r(HIDDEN),
        "embeddings.LayerNorm.bias": r(HIDDEN),
    }
    for n in range(LAYERS):
        p = f"encoder.layer.{n}."
        shapes = {
            "attention.self.query": (HIDDEN, HIDDEN),
            "attention.self.key": (HIDDEN, HIDDEN),
            "attention.self.value": (HIDDEN, HIDDEN),
            "attention.output.dense": (HIDDEN, HIDDEN),
            "intermediate.dense": (INNER, HIDDEN),
            "output.dense": (HIDDEN, INNER),
        }
        for name, (rows, cols) in shapes.items():
            out[f"{p}{name}.weight"] = r(rows, cols)
            out[f"{p}{name}.bias"] = r(rows)
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            out[f"{p}{name}.weight"] = 1 + r(HIDDEN)
            out[f"{p}{name}.bias"] = r(HIDDEN)
    return out


def reference_vector(
    folder: Path, tensors: dict[str, npt.NDArray[np.float32]], text: str, pooling: str = "mean"
) -> npt.NDArray[np.float64]:
    """BERT as written down: no fusing, no batching, float64, ``math.erf``."""
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    ids = tokenizer.encode(text).ids
    w = {k: v.astype(np.float64) for k, v in tensors.items()}

    def norm(x: npt.NDArray[np.float64], name: str) -> npt.NDArray[np.float64]:
        mean = x.mean()
        var = ((x - mean) ** 2).mean()
        out: npt.NDArray[np.float64] = (x - mean) / math.sqrt(var + 1e-12) * w[
            f"{name}.weight"
        ] + w[f"{name}.bias"]
        return out

    states = [
        norm(
            w["embeddings.word_embeddings.weight"][t]
            + w["embeddings.position_embeddings.weight"][i]
            + w["embeddings.token_type_embeddings.weight"][0],
            "embeddings.LayerNorm",
        )
        for i, t in enumerate(ids)
    ]
    size = HIDDEN // HEADS
    for n in range(LAYERS):
        p = f"encoder.layer.{n}."

        def proj(x: npt.NDArray[np.float64], name: str, p: str = p) -> npt.NDArray[np.float64]:
            out: npt.NDArray[np.float64] = w[f"{p}{name}.weight"] @ x + w[f"{p}{name}.bias"]
            return out

        q = [proj(s, "attention.self.query") for s in states]
        k = [proj(s, "attention.self.key") for s in states]
        v = [proj(s, "attention.self.value") for s in states]
        new = []
        for i in range(len(states)):
            context = np.zeros(HIDDEN)
            for h in range(HEADS):
                cut = slice(h * size, (h + 1) * size)
                scores = [float(q[i][cut] @ k[j][cut]) / math.sqrt(size) for j in range(len(k))]
                top = max(scores)
                weights = [math.exp(s - top) for s in scores]
                total = sum(weights)
                for j, weight in enumerate(weights):
                    context[cut] += weight / total * v[j][cut]
            x = norm(
                states[i] + proj(context, "attention.output.dense"),
                f"{p}attention.output.LayerNorm",
            )
            inner = proj(x, "intermediate.dense")
            inner = np.array([0.5 * a * (1 + math.erf(a / math.sqrt(2))) for a in inner])
            new.append(norm(x + proj(inner, "output.dense"), f"{p}output.LayerNorm"))
        states = new
    pooled = states[0] if pooling == "cls" else np.mean(states, axis=0)
    result: npt.NDArray[np.float64] = pooled / np.linalg.norm(pooled)
    return result
