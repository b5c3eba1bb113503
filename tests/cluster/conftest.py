"""The cluster tests' PostgreSQL: the storage tests' throwaway server, a schema per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.discord_api import DiscordFake
from tests.fakes.slack_api import SlackFake
from tests.fakes.telegram_api import TelegramFake
from tests.slack.harness import SCALE, tokens
from tests.storage.conftest import postgres_schema, postgres_server, postgres_url
from tests.telegram.harness import fake_token
from thalos_bot_telegram import SECRET_ENV, TOKEN_ENV

WEBHOOK_SECRET = "cluster-test-secret_0123456789"

__all__ = ["postgres_schema", "postgres_server", "postgres_url"]


@pytest.fixture
def fake() -> Iterator[TelegramFake]:
    with TelegramFake(fake_token(), per_chat_interval=0.05, burst=3, global_per_second=1000) as f:
        yield f
    assert f.retry_after_violations == []


@pytest.fixture(autouse=True)
def _secrets_in_env(fake: TelegramFake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, fake.token)
    monkeypatch.setenv(SECRET_ENV, WEBHOOK_SECRET)


@pytest.fixture
def discord() -> Iterator[DiscordFake]:
    with DiscordFake() as fake:
        yield fake


@pytest.fixture
def slack() -> Iterator[SlackFake]:
    bot, app = tokens()
    with SlackFake(bot, app, scale=SCALE) as fake:
        yield fake
    assert fake.limits.violations == []
