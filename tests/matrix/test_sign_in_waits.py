"""A start while the homeserver cannot be reached yet (a boot without network): the
sign-in is asked again after the kit's growing backoff, and goes on once it answers."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from structlog.testing import capture_logs

from thalos_bot.channels.registry import ChannelHost
from thalos_bot_matrix import TOKEN_ENV
from thalos_bot_matrix.client import JSON, MatrixClient, UnreachableError
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.plugin import _signed_in

pytestmark = pytest.mark.anyio


class Waking:
    """A homeserver out of reach for ``down`` calls (connection refused), then up."""

    def __init__(self, down: int) -> None:
        self.down = down
        self.token: str | None = None

    async def whoami(self) -> JSON:
        if self.down:
            self.down -= 1
            raise UnreachableError("ConnectError", maybe_sent=False)
        return {"user_id": "@bot:example.org", "device_id": "DEVICE"}


async def test_the_sign_in_waits_out_a_homeserver_not_up_yet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slept: list[float]
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "syt_not_a_real_token")
    config = MatrixConfig(
        homeserver="http://127.0.0.1:9", user_id="@bot:example.org", backoff_initial=2.0
    )
    host: Any = SimpleNamespace(state_dir=tmp_path)
    with capture_logs() as logs:
        identity = await _signed_in(cast(MatrixClient, Waking(3)), config, cast(ChannelHost, host))
    assert identity.device_id == "DEVICE"
    assert len(slept) == 3
    assert slept[0] >= 1.5, "not a hot loop"
    assert slept[-1] > slept[0], "the backoff grows"
    said = [e for e in logs if e["event"] == "matrix_homeserver_reconnecting"]
    assert [e["reason"] for e in said] == ["ConnectError"] * 3
    assert all("syt_" not in str(e) for e in logs), "no token in the log"
