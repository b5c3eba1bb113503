"""What a replica still says in a chat: nothing once its lease may have run out, by its
own clock, before any database says so (a process stopped past its lease and continued
must not finish its answer on screen)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import anyio.abc
import pytest

from thalos_bot.channels.health import ChannelHealth
from thalos_bot.channels.ports import Notice
from thalos_bot.cluster.fence import LaneFence
from thalos_bot.cluster.inbox import Inbox
from thalos_bot.cluster.leases import LeaseBook
from thalos_bot.domain.ids import ConversationId
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot_telegram.webhook import Cluster, chat_lane
from thalos_bot_telegram.webhook_intake import Listener

pytestmark = pytest.mark.anyio


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PgDatabase]:
    async with await PgDatabase.open(postgres_url) as opened:
        yield opened


def gate_over(
    db: PgDatabase, leases: LeaseBook, group: anyio.abc.TaskGroup
) -> tuple[LaneFence, Cluster]:
    listener = Listener(Inbox(db, 1), "secret", lambda body: None)
    cluster = Cluster(
        listener, leases, anyio.Event(), ChannelHealth(), 0, anyio.CancelScope(), set(), {}
    )
    fence = LaneFence(leases, cluster.lost, cluster.unanswered, chat_lane, group=group)
    return fence, cluster


async def test_a_lease_overdue_by_the_local_clock_silences_the_chat(db: PgDatabase) -> None:
    # A lease of a microsecond: over before acquire() even returns, as after a SIGSTOP.
    leases = LeaseBook(db, "telegram", "replica-a", 1e-6, chat_lane)
    assert await leases.acquire("42") is not None
    async with anyio.create_task_group() as group:
        gate, _ = gate_over(db, leases, group)
        assert not leases.fresh("42")
        assert not gate(ConversationId("42"), Notice("late"))
        assert not gate(ConversationId("42:7"), Notice("late")), "a topic of that chat too"
        assert gate(ConversationId("43"), Notice("x")), "a chat never held here is not fenced"


async def test_a_renewed_lease_speaks_and_a_lost_one_does_not(db: PgDatabase) -> None:
    leases = LeaseBook(db, "telegram", "replica-a", 15, chat_lane)
    assert await leases.acquire("42") is not None
    async with anyio.create_task_group() as group:
        gate, cluster = gate_over(db, leases, group)
        assert gate(ConversationId("42"), Notice("hello"))
        cluster.lost.add("42")
        assert not gate(ConversationId("42"), Notice("hello"))
