"""The per-address rate limit on the real listener: the page and the webhook receiver
on it answer 429 with Retry-After once an address has spent its burst."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.fakes.anthropic_api import AnthropicFake
from tests.web.harness import WebDaemon, web_daemon

pytestmark = pytest.mark.slow

LIMITED = """
rate_limit = 1
rate_burst = 3

[[hooks]]
name = "ci"
path = "/hooks/ci"
secret_env = "THALOS_TEST_RATE_HOOK_SECRET"
scheme = "generic"
principal = "p1"
deliver_to = "nowhere"
prompt = "The build ended"
"""
"""One request a minute after a burst of three: the fourth inside a minute is refused
however slow the machine is."""


@pytest.fixture(scope="module")
def limited(
    anthropic: AnthropicFake, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WebDaemon]:
    with web_daemon(tmp_path_factory.mktemp("web-rate"), anthropic.base_url, LIMITED) as running:
        yield running


def test_the_page_and_the_hooks_share_one_bucket_per_address(limited: WebDaemon) -> None:
    with httpx.Client(base_url=limited.url, timeout=30) as client:
        first = [client.get("/login").status_code for _ in range(2)]
        unsigned = client.post("/hooks/ci", content=b"{}")
        refused_hook = client.post("/hooks/ci", content=b"{}")
        refused_page = client.get("/login")
    assert first == [200, 200]
    assert unsigned.status_code == 401, "within the burst the hook checks its signature"
    for refused in (refused_hook, refused_page):
        assert refused.status_code == 429
        assert 1 <= int(refused.headers["retry-after"]) <= 60
