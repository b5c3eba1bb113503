"""A connection's owner storing a message for any replica to run, when the store
fails: run here while the owner is sure of its lease (as without replicas); once a stall
ran the lease out, stored again for the next owner, or dropped, never run here (the
next owner may run it too)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import psycopg
import pytest

from thalos_bot.channels.ports import InboundMessage, Sender
from thalos_bot.cluster.connections import ConnectionLease
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.service.anywhere import Anywhere
from thalos_bot.service.standby import Standby

pytestmark = pytest.mark.anyio
CHANNEL = ChannelId("slack")
MESSAGE = InboundMessage(
    CHANNEL,
    ConversationId("D1"),
    Sender(SecurityContext.of("owner", ["admin"]), "Owner", "U1"),
    "hello",
    datetime(2026, 12, 7, 3, 0, tzinfo=UTC),
    message_ref="1.000100",
)


class Lease:
    def __init__(self, fresh: bool) -> None:
        self._fresh = fresh

    def fresh(self) -> bool:
        return self._fresh


class Inlet:
    def __init__(self) -> None:
        self.run_here: list[str] = []

    def hand_over(self, message: InboundMessage) -> None:
        self.run_here.append(message.text)


class Book:
    owns: Any = None


class Store:
    """The shared inbox: its first ``failures`` stores fail, as the one a stall cut."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.stored: list[str] = []
        self.inlet = Inlet()
        self.book = Book()

    async def store(self, message: InboundMessage) -> bool:
        if self.failures:
            self.failures -= 1
            raise psycopg.OperationalError("terminating connection due to idle-in-transaction")
        self.stored.append(message.text)
        return True


async def store(fresh: bool, failures: int) -> Store:
    anywhere = Store(failures)
    lease = cast(ConnectionLease, Lease(fresh))
    never_opened = cast(Any, None)
    standby = Standby(CHANNEL, never_opened, lease, anywhere=cast(Anywhere, anywhere))
    try:
        await standby._store_anywhere(cast(Anywhere, anywhere), MESSAGE)
    finally:
        standby._send.close()
        standby._receive.close()
    return anywhere


async def test_sure_of_the_lease_a_message_the_store_refuses_is_run_here() -> None:
    found = await store(fresh=True, failures=1)
    assert found.inlet.run_here == ["hello"]
    assert found.stored == []


async def test_past_the_lease_it_is_stored_again_for_the_next_owner() -> None:
    found = await store(fresh=False, failures=1)
    assert found.inlet.run_here == []
    assert found.stored == ["hello"]


async def test_past_the_lease_with_the_store_gone_it_is_dropped_not_run_here() -> None:
    found = await store(fresh=False, failures=2)
    assert found.inlet.run_here == []
    assert found.stored == []
