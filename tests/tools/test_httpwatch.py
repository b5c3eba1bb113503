"""The HTTP transport of our own keeps honouring the proxy environment httpx would."""

from __future__ import annotations

import pytest

from thalos_bot.tools.mcp.httpwatch import environment_proxy

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def test_no_proxy_configured_means_a_direct_connection() -> None:
    assert environment_proxy("https://mcp.example.com/mcp") is None


def test_the_proxy_for_the_scheme_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("http_proxy", "http://plain.internal:3128")
    assert environment_proxy("https://mcp.example.com/mcp") == "http://proxy.internal:3128"
    assert environment_proxy("http://mcp.example.com/mcp") == "http://plain.internal:3128"


def test_no_proxy_hosts_bypass_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("https_proxy", "http://proxy.internal:3128")
    monkeypatch.setenv("no_proxy", "localhost,.corp.example")
    assert environment_proxy("https://localhost:8443/mcp") is None
    assert environment_proxy("https://tools.corp.example/mcp") is None
    assert environment_proxy("https://mcp.example.com/mcp") == "http://proxy.internal:3128"
