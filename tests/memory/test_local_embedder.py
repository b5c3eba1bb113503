"""``mode = "local"``: a sentence-transformers BERT folder run by the numpy encoder.

The folder is a tiny random model written by each test, so the encoder is checked
against a plain re-statement of BERT rather than against itself, and no test needs a
download. (The quality of a real model is measured by ``bench/memory.py --quality
--embedder local:PATH``.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.memory.conftest import NoNetwork
from tests.memory.tiny_bert import HIDDEN, reference_vector, write_tiny_bert
from thalos_bot.cli.main import main
from thalos_bot.config.loader import ConfigError, validate
from thalos_bot.config.memory import EmbeddingSettings, MemorySettings
from thalos_bot.memory.embedders import build_embedder
from thalos_bot.memory.embedding.base import EmbedderError
from thalos_bot.memory.embedding.local import LocalModelEmbedder
from thalos_bot.memory.records import new_memory
from thalos_bot.memory.schema import with_memory
from thalos_bot.memory.store import MemoryStore
from thalos_bot.memory.vectors import VectorIndex
from thalos_bot.storage.database import Database

pytestmark = pytest.mark.anyio

TEXTS = [
    "Sam drinks jasmine tea every morning",
    "The dog is a border collie called Pepper",
    "renews the car tax in March",
    "tea",
    "Who walks my pet when I wake up? Sam, every morning, with the border collie.",
]


@pytest.mark.parametrize("prefix", ["", "bert."])
async def test_vectors_match_bert_written_plainly(
    tmp_path: Path, prefix: str, no_network: NoNetwork
) -> None:
    tensors = write_tiny_bert(tmp_path / "tiny", prefix=prefix)
    embedder = LocalModelEmbedder(tmp_path / "tiny")
    got = await embedder.embed(TEXTS)
    assert got.shape == (len(TEXTS), HIDDEN)
    assert got.dtype == np.float32
    for row, text in zip(got, TEXTS, strict=True):
        assert np.allclose(row, reference_vector(tmp_path / "tiny", tensors, text), atol=2e-5)
    assert no_network.attempts == []


async def test_a_batch_gives_each_text_the_vector_it_gets_alone(tmp_path: Path) -> None:
    write_tiny_bert(tmp_path / "tiny")
    embedder = LocalModelEmbedder(tmp_path / "tiny")
    many = [t for t in TEXTS for _ in range(9)]  # 45 texts: two padded batches, sorted
    together = await embedder.embed(many)
    alone = np.stack([(await embedder.embed([t]))[0] for t in many])
    assert np.allclose(together, alone, atol=1e-5)


async def test_cls_pooling_takes_the_first_token(tmp_path: Path) -> None:
    tensors = write_tiny_bert(tmp_path / "tiny", pooling="cls")
    got = await LocalModelEmbedder(tmp_path / "tiny").embed(TEXTS[:2])
    for row, text in zip(got, TEXTS[:2], strict=True):
        expected = reference_vector(tmp_path / "tiny", tensors, text, pooling="cls")
        assert np.allclose(row, expected, atol=2e-5)


async def test_long_text_is_cut_at_the_models_sequence_length(tmp_path: Path) -> None:
    write_tiny_bert(tmp_path / "tiny")  # max_seq_length 48, 64 positions
    embedder = LocalModelEmbedder(tmp_path / "tiny")
    long = " ".join(["tea"] * 500)
    (vector,) = await embedder.embed([long])
    assert np.isclose(np.linalg.norm(vector), 1.0, atol=1e-5)


def test_the_model_id_follows_the_weights_not_the_place(tmp_path: Path) -> None:
    write_tiny_bert(tmp_path / "a" / "minilm", seed=1)
    write_tiny_bert(tmp_path / "b" / "minilm", seed=1)
    write_tiny_bert(tmp_path / "c" / "minilm", seed=2)
    ids = [LocalModelEmbedder(tmp_path / x / "minilm").model for x in "abc"]
    assert ids[0] == ids[1]
    assert ids[0] != ids[2]
    assert ids[0].startswith(f"local/minilm/{HIDDEN}/")


@pytest.mark.parametrize(
    ("spoil", "problem"),
    [
        (lambda f: (f / "tokenizer.json").unlink(), "tokenizer.json: missing"),
        (lambda f: (f / "model.safetensors").unlink(), "model.safetensors: missing"),
        (
            lambda f: (f / "config.json").write_text(json.dumps({"model_type": "roberta"})),
            "model_type 'roberta' is not 'bert'",
        ),
        (lambda f: (f / "config.json").write_text("{not json"), "config.json: cannot read"),
        (
            lambda f: (f / "config.json").write_text(json.dumps({"model_type": "bert"})),
            "missing or bad key 'hidden_size'",
        ),
        (shutil.rmtree, "not a folder"),
    ],
)
def test_a_folder_it_cannot_run_is_refused_by_name(
    tmp_path: Path, spoil: object, problem: str
) -> None:
    folder = tmp_path / "tiny"
    write_tiny_bert(folder)
    spoil(folder)  # type: ignore[operator]
    with pytest.raises(EmbedderError, match=problem):
        LocalModelEmbedder(folder)


def test_max_pooling_is_refused_by_name(tmp_path: Path) -> None:
    write_tiny_bert(tmp_path / "tiny", pooling="max")
    with pytest.raises(EmbedderError, match=r"1_Pooling/config.json: only one of mean or CLS"):
        LocalModelEmbedder(tmp_path / "tiny")


async def test_weights_it_cannot_load_are_an_embedder_error(tmp_path: Path) -> None:
    write_tiny_bert(tmp_path / "tiny")
    (tmp_path / "tiny" / "model.safetensors").write_bytes(b"\x00" * 64)
    embedder = LocalModelEmbedder(tmp_path / "tiny")
    with pytest.raises(EmbedderError, match=r"model\.safetensors: cannot load"):
        await embedder.embed(["tea"])


def test_the_settings_name_the_key_and_the_file(tmp_path: Path) -> None:
    write_tiny_bert(tmp_path / "tiny")
    with pytest.raises(ConfigError) as caught:
        validate(MemorySettings, {"embeddings": {"mode": "local"}}, "bot.toml", "memory")
    assert any('mode = "local" needs path' in p for p in caught.value.problems)
    (tmp_path / "tiny" / "tokenizer.json").unlink()
    raw = {"embeddings": {"mode": "local", "path": str(tmp_path / "tiny")}}
    with pytest.raises(ConfigError) as caught:
        validate(MemorySettings, raw, "bot.toml", "memory")
    problems = " ".join(caught.value.problems)
    assert "bot.toml" in str(caught.value) or "memory.embeddings" in problems
    assert f"path: {tmp_path / 'tiny' / 'tokenizer.json'}: missing" in problems
    raw = {"embeddings": {"mode": "local", "path": "models/minilm"}}
    with pytest.raises(ConfigError) as caught:
        validate(MemorySettings, raw, "bot.toml", "memory")
    assert any("is not an absolute path" in p for p in caught.value.problems)


def test_check_names_the_model_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_tiny_bert(tmp_path / "tiny")
    config = tmp_path / "bot.toml"
    config.write_text(
        (Path(__file__).parents[2] / "bot.toml").read_text()
        + f'\n[memory.embeddings]\nmode = "local"\npath = "{tmp_path / "tiny"}"\n'
    )
    assert main(["check", "--config", str(config)]) == 0
    assert (
        f"memory: keywords and meaning, local model {tmp_path / 'tiny'}" in capsys.readouterr().out
    )
    (tmp_path / "tiny" / "config.json").unlink()
    assert main(["check", "--config", str(config)]) == 2
    problem = capsys.readouterr()
    assert f"memory.embeddings: path: {tmp_path / 'tiny' / 'config.json'}: missing" in (
        problem.out + problem.err
    )


def test_the_factory_builds_the_local_embedder(tmp_path: Path) -> None:
    write_tiny_bert(tmp_path / "tiny")
    embedder = build_embedder(EmbeddingSettings(mode="local", path=str(tmp_path / "tiny")))
    assert isinstance(embedder, LocalModelEmbedder)
    assert embedder.dimensions == HIDDEN


async def test_recall_by_meaning_runs_on_the_local_model(tmp_path: Path) -> None:
    write_tiny_bert(tmp_path / "tiny")
    embedder = LocalModelEmbedder(tmp_path / "tiny")
    async with await Database.open(tmp_path / "m.db", migrations=with_memory()) as db:
        store = MemoryStore(db, vectors=VectorIndex(embedder, min_similarity=0.0))
        for text in TEXTS[:3]:
            await store.store(new_memory("sam", text), dedupe=False)
        found = await store.recall(["sam"], TEXTS[1], top_k=3, ranking="semantic")
        assert found[0].record.text == TEXTS[1]
        async with db.read() as conn:
            rows = await (
                await conn.execute("SELECT DISTINCT model FROM memory_vectors")
            ).fetchall()
        assert [r[0] for r in rows] == [embedder.model]
