"""``[channels.web]`` as ``bot.toml`` gives it, and what ``check`` and ``doctor`` say."""

from __future__ import annotations

import anyio
import pytest
from pydantic import ValidationError

from thalos_bot.domain.address import Address
from thalos_bot_web.config import WebConfig
from thalos_bot_web.manifest import manifest as plugin


def test_loopback_by_default() -> None:
    config = WebConfig()
    assert (config.host, config.port) == ("127.0.0.1", 8765)
    assert plugin.describe(config) == "a chat page on http://127.0.0.1:8765 for owner"


def test_another_address_needs_public_and_is_told_to_use_tls() -> None:
    with pytest.raises(ValidationError, match="set public = true"):
        WebConfig(listen="0.0.0.0:8765")
    with pytest.raises(ValidationError, match=r"name the TLS proxy in front"):
        WebConfig(listen="0.0.0.0:8765", public=True)  # no proxy named, no https address
    with pytest.raises(ValidationError, match=r"public_url = \"https://"):
        WebConfig(listen="0.0.0.0:8765", public=True, forwarded_allow_ips=["10.0.0.5"])
    secure = WebConfig(
        listen="0.0.0.0:8765",
        public=True,
        public_url="https://bot.example",
        forwarded_allow_ips=["10.0.0.5"],
    )
    assert "behind a TLS proxy" in plugin.describe(secure)
    [check] = anyio.run(lambda: plugin.doctor(secure, offline=True))
    assert check.outcome == "ok"
    assert secure.base_url() == "https://bot.example"


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"listen": "8765"}, "is not host:port"),
        ({"listen": "127.0.0.1:99999"}, "out of range"),
        ({"principals": []}, "at least one principal"),
        ({"principals": ["a:b"]}, "is not a principal id"),
        ({"owners": ["root"]}, "not one of principals"),
    ],
)
def test_a_bad_section_says_what_is_wrong(fields: dict[str, object], words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        WebConfig.model_validate(fields)


def test_only_listed_principals_may_be_written_to() -> None:
    allowlist = plugin.allowlist(WebConfig(principals=["alice"]))
    assert allowlist.refusal(Address.parse("web:alice")) is None
    assert allowlist.refusal(Address.parse("web:bob")) == "user bob is not in principals"
