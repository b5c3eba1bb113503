"""Fixtures for the Telegram channel tests: a fast Telegram fake, and its token in the
environment (built at run time; no real token is ever used)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.telegram_api import TelegramFake
from tests.telegram.harness import fake_token
from thalos_bot_telegram import TOKEN_ENV


@pytest.fixture
def fake() -> Iterator[TelegramFake]:
    """A fake with fast flood control: 20 messages/s per chat (burst 3), 1000/s overall.
    No test may send into a chat Telegram has told to wait (a retry_after violation)."""
    with TelegramFake(fake_token(), per_chat_interval=0.05, burst=3, global_per_second=1000) as f:
        yield f
    assert f.retry_after_violations == [], "a call went out before its retry_after had passed"


@pytest.fixture(autouse=True)
def _token_in_env(fake: TelegramFake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, fake.token)
