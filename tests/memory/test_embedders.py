"""The embedders: WordLlama loads its bundled files with no network at all; the
endpoint embedder speaks OpenAI's /embeddings to a strict local fake; hybrid recall
works through either."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import numpy as np
import pytest
from structlog.testing import capture_logs

from tests.fakes.embeddings_api import EmbeddingsFake
from tests.memory.conftest import NoNetwork
from tests.memory.labelled import load, score
from thalos_bot.config.memory import EmbeddingSettings
from thalos_bot.memory.embedders import build_embedder
from thalos_bot.memory.embedding import wordllama
from thalos_bot.memory.embedding.base import EmbedderError
from thalos_bot.memory.embedding.endpoint import KEY_VARIABLE, EndpointEmbedder
from thalos_bot.memory.embedding.null import NullEmbedder
from thalos_bot.memory.reindex import Reindexer
from thalos_bot.memory.store import MemoryStore
from thalos_bot.storage.database import Database

pytestmark = pytest.mark.anyio

KEY = "sk-embed-test-5b1e"


@pytest.fixture
def fake() -> Iterator[EmbeddingsFake]:
    with EmbeddingsFake(api_key=KEY) as server:
        yield server


async def test_wordllama_loads_its_bundled_files_without_any_network(
    no_network: NoNetwork, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wordllama, "_LOADED", {})
    embedder = wordllama.WordLlamaEmbedder()
    vectors = await embedder.embed(
        ["Drinks jasmine tea every morning", "Has green tea at breakfast", "Renews the car tax"]
    )
    assert vectors.shape == (3, 256)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])
    assert embedder.model == "wordllama/l2_supercat/256"
    assert no_network.attempts == []


def test_the_factory_follows_the_settings() -> None:
    assert isinstance(build_embedder(EmbeddingSettings()), wordllama.WordLlamaEmbedder)
    assert isinstance(build_embedder(EmbeddingSettings(mode="off")), NullEmbedder)
    endpoint = build_embedder(
        EmbeddingSettings(
            mode="endpoint",
            base_url="http://127.0.0.1:9/v1",
            model="text-embedding-3-small",
            dimensions=128,
        ),
        environ={KEY_VARIABLE: KEY},
    )
    assert isinstance(endpoint, EndpointEmbedder)
    assert endpoint.model == "endpoint/text-embedding-3-small/128"
    with pytest.raises(ValueError, match="needs base_url and model"):
        EmbeddingSettings(mode="endpoint")


async def test_the_endpoint_embedder_sends_the_key_and_gets_unit_vectors(
    fake: EmbeddingsFake,
) -> None:
    embedder = EndpointEmbedder(
        fake.base_url, "text-embedding-3-small", dimensions=128, api_key=KEY
    )
    try:
        vectors = await embedder.embed(["Drinks jasmine tea", "Owns a border collie"])
    finally:
        await embedder.aclose()
    assert vectors.shape == (2, 128)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert fake.requests == [
        {
            "model": "text-embedding-3-small",
            "input": ["Drinks jasmine tea", "Owns a border collie"],
            "encoding_format": "float",
            "dimensions": 128,
        }
    ]


async def test_endpoint_failures_are_typed_and_never_carry_the_key(fake: EmbeddingsFake) -> None:
    wrong = EndpointEmbedder(fake.base_url, "text-embedding-3-small", api_key="sk-wrong-key-77")
    with capture_logs() as logs, pytest.raises(EmbedderError) as refused:
        await wrong.embed(["anything"])
    assert "401" in str(refused.value)
    assert "sk-wrong-key-77" not in str(refused.value) + json.dumps(logs, default=str)
    await wrong.aclose()

    embedder = EndpointEmbedder(fake.base_url, "text-embedding-3-small", api_key=KEY)
    fake.fail_next(503)
    with pytest.raises(EmbedderError, match="503"):
        await embedder.embed(["anything"])
    assert (await embedder.embed(["anything"])).shape == (1, 256)
    await embedder.aclose()

    gone = EndpointEmbedder("http://127.0.0.1:9/v1", "text-embedding-3-small", api_key=KEY)
    with pytest.raises(EmbedderError, match="unreachable"):
        await gone.embed(["anything"])
    await gone.aclose()


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"input": ["x"]}, 400, "you must provide a model parameter"),
        ({"model": "text-embedding-3-small"}, 400, "'input' is a required property"),
        ({"model": "text-embedding-3-small", "input": []}, 400, "'$.input' is invalid"),
        ({"model": "text-embedding-3-small", "input": ""}, 400, "'$.input' is invalid"),
        ({"model": "no-such-model", "input": ["x"]}, 404, "does not exist"),
        (
            {"model": "text-embedding-ada-002", "input": ["x"], "dimensions": 64},
            400,
            "does not support specifying dimensions",
        ),
        (
            {"model": "text-embedding-3-small", "input": ["x"], "encoding_format": "int8"},
            400,
            "is not one of ['float', 'base64']",
        ),
    ],
)
async def test_the_fake_refuses_what_openai_refuses(
    fake: EmbeddingsFake, body: dict[str, Any], status: int, message: str
) -> None:
    async with httpx2.AsyncClient() as client:
        response = await client.post(
            fake.base_url + "/embeddings", json=body, headers={"authorization": f"Bearer {KEY}"}
        )
        anonymous = await client.post(fake.base_url + "/embeddings", json=body)
    assert response.status_code == status
    assert message in response.json()["error"]["message"]
    assert anonymous.status_code == 401


async def test_hybrid_recall_through_the_endpoint_finds_paraphrases(
    db: Database, fake: EmbeddingsFake
) -> None:
    from thalos_bot.memory.vectors import VectorIndex

    embedder = EndpointEmbedder(fake.base_url, "text-embedding-3-small", api_key=KEY)
    vectors = VectorIndex(embedder)
    store = MemoryStore(db, vectors=vectors)
    key_of = await load(store)
    await Reindexer(db, vectors).reindex()
    bm25, _ = await score(store, key_of, "lexical", "paraphrase")
    hybrid, _ = await score(store, key_of, "hybrid", "paraphrase")
    await embedder.aclose()
    assert bm25.recall_at_5 == 0.0
    assert hybrid.recall_at_5 >= 0.4
