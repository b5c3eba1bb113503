"""The ``/sync`` loop's retries, without a homeserver: a fake one refusing with a 429
(as Synapse does, ``M_LIMIT_EXCEEDED`` with ``retry_after_ms``), then answering."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from thalos_bot.channels.kept import KeptState
from thalos_bot.channels.pacing.backoff import Backoff
from thalos_bot.channels.reconnect import Reconnecting
from thalos_bot_matrix.client import JSON, MatrixError
from thalos_bot_matrix.state import SyncState
from thalos_bot_matrix.sync import Syncer

pytestmark = pytest.mark.anyio


class StopError(Exception):
    """Ends the loop once the test has seen what it looks at."""


class Homeserver:
    def __init__(self, refusals: int, retry_after_ms: int) -> None:
        self.refusals = refusals
        self.retry_after_ms = retry_after_ms
        self.calls = 0

    async def sync(self, since: str | None, timeout: float, filter_: str) -> JSON:
        self.calls += 1
        if self.calls <= self.refusals:
            raise MatrixError(429, "M_LIMIT_EXCEEDED", self.retry_after_ms / 1000)
        return {"next_batch": f"s{self.calls}"}


class Watched(Syncer):
    """Notes the link's health and backoff when the batch is handled, then stops."""

    seen: tuple[bool, int] | None = None

    async def handle(self, batch: JSON, *, history: bool) -> None:
        self.seen = (self.link.health.retrying, self.link.backoff.failures)
        raise StopError


def _syncer(server: Homeserver, tmp_path: Path) -> Watched:
    link = Reconnecting("matrix_sync", Backoff(1.0, 30.0))
    unused: Any = SimpleNamespace()
    client: Any = server
    state = SyncState(KeptState(tmp_path / "sync.json"))  # a first start
    return Watched(
        client=client,
        me="@bot:example.org",
        state=state,
        timeout=30,
        link=link,
        crypto=None,
        admission=unused,
        intake=unused,
        approvals=unused,
        notify=lambda *_: None,
    )


async def test_a_429_asking_for_no_wait_still_backs_off(tmp_path: Path, slept: list[float]) -> None:
    server = Homeserver(refusals=6, retry_after_ms=0)
    syncer = _syncer(server, tmp_path)
    with pytest.raises(StopError):
        await syncer.run()
    assert server.calls == 7
    assert len(slept) == 6
    assert min(slept) > 0, "no hot loop"
    assert slept[-1] > slept[0], "the backoff grows"


async def test_the_link_is_healthy_again_as_soon_as_a_sync_answers(
    tmp_path: Path, slept: list[float]
) -> None:
    syncer = _syncer(Homeserver(refusals=2, retry_after_ms=500), tmp_path)
    with pytest.raises(StopError):
        await syncer.run()
    assert slept == [0.5, 0.5], "the homeserver's own wait"
    assert syncer.seen == (False, 0), "healthy and backoff reset before the batch is handled"
    assert syncer.link.receiving.is_set()
