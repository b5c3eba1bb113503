"""Fixtures for the Slack channel tests: the Slack fake, and its tokens in the
environment (made at run time; no real token is ever used)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.slack_api import SlackFake
from tests.slack.harness import SCALE, tokens
from thalos_bot_slack import APP_TOKEN_ENV, BOT_TOKEN_ENV
from thalos_bot_slack.plugin import TIER_SCALE_ENV


@pytest.fixture
def fake() -> Iterator[SlackFake]:
    """No test may call a method Slack told to wait (a Retry-After violation), nor
    acknowledge an envelope twice or one never sent."""
    bot, app = tokens()
    with SlackFake(bot, app, scale=SCALE) as f:
        yield f
    assert f.limits.violations == [], "a call went out before its Retry-After had passed"
    assert f.socket.stray_acks == [], "acks of envelopes not sent (or acked twice)"


@pytest.fixture(autouse=True)
def _tokens_in_env(fake: SlackFake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(APP_TOKEN_ENV, fake.app_token)
    monkeypatch.setenv(BOT_TOKEN_ENV, fake.bot_token)
    monkeypatch.setenv(TIER_SCALE_ENV, str(SCALE))
