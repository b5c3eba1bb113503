"""Pairing while the homeserver cannot be reached: the wait for the code asks again
after a backoff, not in a loop as fast as the refusals come."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from thalos_bot.channels.admission.pairing import PairingCode
from thalos_bot_matrix.client import MatrixClient, MatrixError, UnreachableError
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.pair_command import MatrixSide

pytestmark = pytest.mark.anyio


class Down:
    """A homeserver out of reach: every sync refused at once (connection refused)."""

    def __init__(self) -> None:
        self.syncs = 0

    async def sync(self, *_: Any) -> dict[str, Any]:
        self.syncs += 1
        raise UnreachableError("connection refused", maybe_sent=False)


async def test_the_wait_backs_off_while_the_homeserver_is_down(tmp_path: Path) -> None:
    config = MatrixConfig(
        homeserver="http://127.0.0.1:9", user_id="@bot:x", backoff_initial=0.1, backoff_max=0.2
    )
    down = Down()
    side = await MatrixSide.opened(config, cast(MatrixClient, down), tmp_path)
    assert await side.wait(PairingCode(ttl=1.0)) is None, "the code expired"
    # A second at 0.1 s then 0.2 s apart (25 % jitter) asks about seven times; before,
    # it asked for the whole second without a pause (thousands).
    assert 2 <= down.syncs <= 20, down.syncs


class Limited:
    """A homeserver whose first syncs are rate limited (429, M_LIMIT_EXCEEDED)."""

    def __init__(self, limited: int) -> None:
        self.limited = limited
        self.syncs = 0

    async def sync(self, *_: Any) -> dict[str, Any]:
        self.syncs += 1
        if self.syncs <= self.limited:
            raise MatrixError(429, "M_LIMIT_EXCEEDED", retry_after=0.05)
        await anyio.sleep(10)  # a long poll with nothing in it
        return {}


async def test_a_rate_limited_sync_is_waited_out_not_fatal(tmp_path: Path) -> None:
    config = MatrixConfig(homeserver="http://127.0.0.1:9", user_id="@bot:x")
    limited = Limited(2)
    side = await MatrixSide.opened(config, cast(MatrixClient, limited), tmp_path)
    assert await side.wait(PairingCode(ttl=1.0)) is None, "the code expired, waiting"
    assert limited.syncs == 3
