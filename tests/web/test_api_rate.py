"""Requests per API key per minute: the bucket on a clock the test moves, and the
daemon's 429 with ``Retry-After`` in OpenAI's shape, for one key and not another."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from tests.fakes.anthropic_api import AnthropicFake
from tests.web.harness import WebDaemon, web_daemon
from tests.web.test_openai_api import client, make_key
from thalos_bot.api.rate import KeyRate


def test_the_bucket_allows_a_burst_then_one_request_per_share_of_the_minute() -> None:
    now = [100.0]
    rate = KeyRate(3, clock=lambda: now[0])
    assert [rate.take("k1") for _ in range(3)] == [0, 0, 0]
    assert rate.take("k1") == 20  # one comes back every 20 s
    assert rate.take("k2") == 0  # another key has its own bucket
    now[0] += 19.0
    assert rate.take("k1") == 1
    now[0] += 1.0
    assert rate.take("k1") == 0
    now[0] += 600.0  # a long pause refills to the burst, no further
    assert [rate.take("k1") for _ in range(4)] == [0, 0, 0, 20]
    with pytest.raises(ValueError, match="at least 1"):
        KeyRate(0)


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDaemon]:
    with (
        AnthropicFake() as anthropic,
        web_daemon(
            tmp_path_factory.mktemp("api-rate"),
            anthropic.base_url,
            "api = true\napi_requests_per_minute = 2",
        ) as daemon,
    ):
        yield daemon


def test_a_key_past_its_rate_gets_429_with_retry_after(limited: WebDaemon) -> None:
    busy = client(limited, make_key(limited, "--person", "p1"))
    assert [m.id for m in busy.models.list()] == ["assistant", "coder"]
    busy.models.list()
    with pytest.raises(openai.RateLimitError) as refused:
        busy.models.list()
    assert refused.value.code == "rate_limit_exceeded"
    assert "2 requests a minute" in refused.value.message
    wait = int(refused.value.response.headers["retry-after"])
    assert 1 <= wait <= 30
    other = client(limited, make_key(limited, "--person", "p2"))
    assert len(other.models.list().data) == 2  # another key is not held back
