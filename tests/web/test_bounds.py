"""The listener's bounds, on a daemon of its own: a header timeout, a connection cap
kept under the process's descriptor limit, no log flood, a Secure cookie when public,
and a stream that ends when its login expires."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.fakes.anthropic_api import AnthropicFake
from tests.web.harness import WebDaemon, web_daemon

pytestmark = pytest.mark.slow

NOFILE = 256
"""The daemon's descriptor limit here (a service has 1,024): idle connections past it
would leave the daemon unable to accept, open a file or reach a platform."""
SESSION_SECONDS = 3.0
BOUNDS = f"""
public = true
session_days = {SESSION_SECONDS / 86400}
"""


@pytest.fixture(scope="module")
def bounded(
    anthropic: AnthropicFake, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WebDaemon]:
    folder = tmp_path_factory.mktemp("web-bounded")
    with web_daemon(folder, anthropic.base_url, BOUNDS, nofile=NOFILE) as running:
        yield running


def test_an_open_stream_ends_when_its_login_expires(bounded: WebDaemon) -> None:
    _, code = bounded.pair_link("p24")
    with httpx.Client(base_url=bounded.url, timeout=30) as client:
        answer = client.post("/login", data={"code": code}, follow_redirects=False)
        cookie = answer.headers["set-cookie"].split(";")[0]
        seen: list[str] = []
        with client.stream("GET", "/api/events", headers={"Cookie": cookie}) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                seen.append(line)
                if line.startswith(": keepalive"):
                    break  # 15 s of idling: the stream outlived its login
    assert not any(line.startswith(": keepalive") for line in seen), seen


def test_a_public_page_marks_its_cookie_secure(bounded: WebDaemon) -> None:
    """public = true means a TLS proxy in front, on another address (its
    X-Forwarded-Proto is not trusted, so the request looks like plain http here)."""
    _, code = bounded.pair_link("p23")
    with httpx.Client(base_url=bounded.url, timeout=30) as client:
        answer = client.post("/login", data={"code": code}, follow_redirects=False)
    assert answer.status_code == 303
    assert "secure" in answer.headers["set-cookie"].lower()
