"""Fixtures for the Signal channel tests: the fake signal-cli daemon and the bot's
number in the environment."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.signal_cli import SignalCliFake
from thalos_bot_signal import ACCOUNT_ENV
from thalos_bot_signal.config import SignalConfig


@pytest.fixture
def fake() -> Iterator[SignalCliFake]:
    with SignalCliFake() as f:
        yield f
    assert f.failures == [], f.failures


@pytest.fixture(autouse=True)
def _account_in_env(fake: SignalCliFake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ACCOUNT_ENV, fake.world.bot.number)


def make_config(fake: SignalCliFake, **overrides: Any) -> SignalConfig:
    values: dict[str, Any] = {
        "enabled": True,
        "daemon_url": fake.url,
        "allowed_users": [fake.world.user.number],
        "groups": [fake.world.group_id],
        "send_interval": 0.05,
        "probe_wait": 3.0,
        "request_timeout": 10.0,
        "backoff_initial": 0.05,
        "backoff_max": 0.2,
        "drain_timeout": 5,
    }
    values.update(overrides)
    return SignalConfig.model_validate(values)
