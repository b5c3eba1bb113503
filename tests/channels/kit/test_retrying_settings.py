"""The kit's ``RetryingSettings``: every transport that reconnects after a failure
refuses a ``backoff_max`` shorter than its ``backoff_initial``, at that key, and its
reconnecting link waits those backoffs."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from thalos_bot.config.loader import ConfigError, validate
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_signal.config import SignalConfig
from thalos_bot_telegram.config import TelegramConfig


@pytest.mark.parametrize(
    ("model", "channel"),
    [(MatrixConfig, "matrix"), (SignalConfig, "signal"), (TelegramConfig, "telegram")],
)
def test_a_backoff_max_shorter_than_its_initial_wait_is_refused(
    model: type[BaseModel], channel: str
) -> None:
    section = {"backoff_initial": "10s", "backoff_max": "5s"}
    with pytest.raises(ConfigError) as raised:
        validate(model, section, "bot.toml", f"channels.{channel}")
    assert any(
        "backoff_max: must not be shorter than backoff_initial" in problem and "bot.toml" in problem
        for problem in raised.value.problems
    ), raised.value.problems
    taken = validate(model, {"backoff_initial": "5s", "backoff_max": "5s"}, "bot.toml", "x")
    assert getattr(taken, "backoff_max", None) == 5.0


@pytest.mark.anyio
async def test_a_sections_reconnecting_link_waits_its_backoffs(slept: list[float]) -> None:
    config = MatrixConfig(backoff_initial=4.0, backoff_max=6.0)
    link = config.reconnecting("matrix_sync")
    for _ in range(3):
        await link.failed("unreachable")
    assert 3.0 <= slept[0] <= 5.0, "the first wait is backoff_initial (with its jitter)"
    assert all(delay <= 7.5 for delay in slept), "never past backoff_max (with its jitter)"
    assert link.health.retrying
