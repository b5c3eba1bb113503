"""The cluster tests' PostgreSQL: the storage tests' throwaway server, and per test a
database of its own, copied from one with every migration applied."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.discord_api import DiscordFake
from tests.fakes.slack_api import SlackFake
from tests.fakes.telegram_api import TelegramFake
from tests.slack.harness import SCALE, tokens
from tests.storage.conftest import (
    PostgresSchema,
    migrated_schema,
    migrated_template,
    postgres_server,
    postgres_url,
)
from tests.telegram.harness import fake_token
from thalos_bot_telegram import SECRET_ENV, TOKEN_ENV

WEBHOOK_SECRET = "cluster-test-secret_0123456789"

__all__ = ["migrated_schema", "migrated_template", "postgres_server", "postgres_url"]


@pytest.fixture
def postgres_schema(migrated_schema: PostgresSchema) -> PostgresSchema:
    """The store the replicas share, already migrated: they start on it as on every
    start after a deployment's first. Applying the migrations from nothing (once, under
    the lock, with replicas starting together) is tests/storage's subject."""
    return migrated_schema


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
