"""Pairing's wait for the code over a homeserver that holds each ``/sync`` open while
nothing comes (as Synapse does, up to the timeout asked): the wait ends as the code
expires, not when the long poll returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from thalos_bot.channels.admission.pairing import PairingCode
from thalos_bot_matrix.client import MatrixClient
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.pair_command import MatrixSide
from thalos_bot_matrix.state import SyncState

pytestmark = pytest.mark.anyio


class Quiet:
    """A homeserver with nothing new: the first sync answers at once (the rooms), every
    later one is held open."""

    def __init__(self) -> None:
        self.syncs = 0

    async def sync(self, since: str | None, *_: Any) -> dict[str, Any]:
        self.syncs += 1
        if since is None:
            return {"next_batch": "s1"}
        await anyio.sleep_forever()
        raise AssertionError


async def test_the_wait_ends_as_the_code_expires_not_when_the_long_poll_returns(
    tmp_path: Path,
) -> None:
    config = MatrixConfig(homeserver="http://127.0.0.1:9", user_id="@bot:x", sync_timeout=3600)
    server = Quiet()
    side = await MatrixSide.opened(config, cast(MatrixClient, server), tmp_path)
    waited: list[object] = []
    with anyio.move_on_after(20) as bound:  # a bound on a hang, not a timing
        waited.append(await side.wait(PairingCode(ttl=0.2)))
    assert not bound.cancelled_caught, "the wait outlived its code by the long poll"
    assert waited == [None], "the code expired"
    assert server.syncs == 2
    assert (await SyncState.opened(tmp_path, "@bot:x")).next_batch == "s1", "position kept"
