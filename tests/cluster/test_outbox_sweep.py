"""A dead replica's claimed outbox rows are delivered by the replicas already running
(their periodic sweep), each exactly once: in-process webhook replicas, each with the
real outbox delivering through the real Telegram adapter, on one PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime

import pytest

from tests.cluster.replicas import replica
from tests.fakes.telegram_api import TelegramFake
from tests.storage.conftest import PostgresSchema
from tests.telegram.harness import USER
from thalos_bot.cluster.outbox_claims import ClaimingOutbox
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.service.outbox import Outbox
from thalos_bot.storage.pg.database import PgDatabase, fetch_all
from thalos_bot.storage.protocol import OutboxAddress, OutboxEntry

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]
TELEGRAM = ChannelId("telegram")
CHAT = ConversationId(str(USER))
SPAN = 2.0
"""Seconds a claim lasts: the live replicas sweep every half second."""


@asynccontextmanager
async def live_replicas(
    fake: TelegramFake, url: str, db: PgDatabase, count: int
) -> AsyncIterator[list[Outbox]]:
    """``count`` running replicas, each delivering from the shared outbox."""
    async with AsyncExitStack() as stack:
        outboxes = []
        for i in range(count):
            bot = await stack.enter_async_context(replica(fake, url))
            store = ClaimingOutbox(db, f"live-{i}", span=SPAN)
            outbox = Outbox(store, {TELEGRAM: bot.pair.adapter}, keep=3600)
            outboxes.append(await stack.enter_async_context(outbox.running()))
        yield outboxes


async def claimed_by_a_replica_that_died(db: PgDatabase, schema: PostgresSchema, n: int) -> None:
    """``n`` finals written and claimed by a replica that then died before sending."""
    dead = ClaimingOutbox(db, "dead", span=SPAN)
    for i in range(n):
        entry = OutboxEntry(OutboxAddress(TELEGRAM, CHAT, f"k{i:02d}"), f"final {i:02d}")
        await dead.add(entry, datetime.now(UTC))
    schema.sql("UPDATE outbox SET created_at = created_at - interval '1 minute'")
    assert len(await dead.pending(TELEGRAM)) == n


async def test_a_dead_replicas_claimed_finals_are_delivered_once_by_running_replicas(
    fake: TelegramFake, postgres_url: str, postgres_schema: PostgresSchema
) -> None:
    fake.add_chat(USER)  # the person has talked to the bot before
    async with await PgDatabase.open(postgres_url) as db:
        async with live_replicas(fake, postgres_url, db, 3):
            # The replicas are running (their start-up redelivery is over) when the
            # other one claims the rows and dies: only a sweep can pick them up.
            await claimed_by_a_replica_that_died(db, postgres_schema, 12)
            expected = [f"final {i:02d}" for i in range(12)]
            await fake.wait_for(lambda: sorted(fake.texts(USER)) == expected, 60)
            left = await ClaimingOutbox(db, "probe", span=SPAN).pending(TELEGRAM)
        assert left == [], "every row was confirmed"
        async with db.read() as conn:
            rows = await fetch_all(conn, "SELECT claimed_by, claim_token, state FROM outbox")
    sent = [c.params["text"] for c in fake.calls("sendMessage")]
    assert sorted(sent) == expected, "each final sent exactly once"
    assert {r["claimed_by"] for r in rows} <= {"live-0", "live-1", "live-2"}
    assert {(r["claim_token"], r["state"]) for r in rows} == {(2, "delivered")}, (
        "each taken over once from the dead replica, and delivered"
    )
