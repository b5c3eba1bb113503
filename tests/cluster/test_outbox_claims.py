"""Outbox rows claimed by one replica at a time (SKIP LOCKED, a claim token), on a real
PostgreSQL; a row taken over keeps what its delivery noted (the send-in-doubt check)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from tests.storage.conftest import PostgresSchema
from thalos_bot.cluster.outbox_claims import ClaimingOutbox
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.service.stores import postgres_stores
from thalos_bot.storage.database import Database
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.protocol import OutboxAddress, OutboxEntry

pytestmark = pytest.mark.anyio
TELEGRAM = ChannelId("telegram")


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PgDatabase]:
    async with await PgDatabase.open(postgres_url) as opened:
        yield opened


def entry(key: str) -> OutboxEntry:
    return OutboxEntry(OutboxAddress(TELEGRAM, ConversationId("42"), key), f"final {key}")


async def test_a_fresh_row_is_left_to_its_writer_then_claimed_once(
    db: PgDatabase, postgres_schema: PostgresSchema
) -> None:
    a = ClaimingOutbox(db, "replica-a", span=30)
    b = ClaimingOutbox(db, "replica-b", span=30)
    await a.add(entry("k1"), datetime.now(UTC))
    assert await b.pending(TELEGRAM) == [], "the writer is delivering it right now"
    postgres_schema.sql("UPDATE outbox SET created_at = now() - interval '1 minute'")
    claimed = await b.pending(TELEGRAM)
    assert [r.id for r in claimed] == ["k1"]
    assert await a.pending(TELEGRAM) == [], "claimed: nobody else takes it"
    assert await b.claim_token("k1") == ("replica-b", 1)


async def test_a_claim_that_ran_out_is_taken_over_with_its_progress(
    db: PgDatabase, postgres_schema: PostgresSchema
) -> None:
    a = ClaimingOutbox(db, "replica-a", span=30)
    c = ClaimingOutbox(db, "replica-c", span=30)
    await a.add(entry("k1"), datetime.now(UTC))
    postgres_schema.sql("UPDATE outbox SET created_at = now() - interval '1 minute'")
    assert len(await a.pending(TELEGRAM)) == 1
    await a.save_progress("k1", {"sent": [7], "in_doubt": True}, datetime.now(UTC))
    postgres_schema.sql("UPDATE outbox SET claimed_until = now() - interval '1 second'")
    taken = await c.pending(TELEGRAM)
    assert [r.progress for r in taken] == [{"sent": [7], "in_doubt": True}]
    assert await c.claim_token("k1") == ("replica-c", 2)


async def test_replicas_claiming_together_split_the_rows(
    db: PgDatabase, postgres_schema: PostgresSchema
) -> None:
    writer = ClaimingOutbox(db, "writer", span=30)
    for i in range(60):
        await writer.add(entry(f"k{i:02d}"), datetime.now(UTC))
    postgres_schema.sql("UPDATE outbox SET created_at = created_at - interval '1 minute'")
    replicas = [ClaimingOutbox(db, f"r{i}", span=30) for i in range(3)]
    got: dict[str, list[str]] = {}

    async def claim(outbox: ClaimingOutbox) -> None:
        got[outbox.replica] = [r.id for r in await outbox.pending(TELEGRAM)]

    async with anyio.create_task_group() as group:
        for outbox in replicas:
            group.start_soon(claim, outbox)
    every = [row for rows in got.values() for row in rows]
    assert sorted(every) == [f"k{i:02d}" for i in range(60)], "each row claimed exactly once"
    for rows in got.values():
        assert rows == sorted(rows), "oldest first"


async def test_a_row_being_delivered_is_held_by_its_replica_not_taken_over(
    db: PgDatabase, postgres_schema: PostgresSchema
) -> None:
    writer = ClaimingOutbox(db, "writer", span=30)
    other = ClaimingOutbox(db, "other", span=30)
    await writer.add(entry("own"), datetime.now(UTC))  # its live final, never claimed
    await writer.add(entry("claimed"), datetime.now(UTC))
    postgres_schema.sql("UPDATE outbox SET created_at = now() - interval '1 minute'")
    postgres_schema.sql(
        "UPDATE outbox SET claimed_by = 'writer', claim_token = 1 WHERE id = 'claimed'"
    )
    # Both would be free now (head start over, claim run out), but the writer renews
    # them while it is still delivering (a long 429 wait).
    postgres_schema.sql(
        "UPDATE outbox SET claimed_until = now() - interval '1 second' WHERE id = 'claimed'"
    )
    await writer.hold({"own", "claimed"})
    assert await other.pending(TELEGRAM) == []
    assert await other.claim_token("own") == ("writer", 0)
    assert await other.claim_token("claimed") == ("writer", 1)


async def test_a_replica_never_renews_a_row_another_took_over(
    db: PgDatabase, postgres_schema: PostgresSchema
) -> None:
    stalled = ClaimingOutbox(db, "stalled", span=30)
    taker = ClaimingOutbox(db, "taker", span=30)
    await stalled.add(entry("k1"), datetime.now(UTC))
    postgres_schema.sql("UPDATE outbox SET created_at = now() - interval '1 minute'")
    assert len(await taker.pending(TELEGRAM)) == 1
    await stalled.hold({"k1"})  # woke up late: the row is the taker's now
    assert await taker.claim_token("k1") == ("taker", 1)


async def test_a_replicas_stores_claim_under_the_name_its_leases_are_held_by(
    db: PgDatabase, postgres_schema: PostgresSchema, tmp_path: Path
) -> None:
    """A final its writer's own sweep renewed, the writer then dead: taken over as soon
    as the writer's lease on the conversation ran out, not after the claim span, because
    the stores claim under the name the host holds its leases by (``Stores.replica``)."""
    async with await Database.open(tmp_path / "local.db", migrations=ALL_MIGRATIONS) as local:
        stores = postgres_stores(local, db, replicas=True, lease=2.0)
        dead = stores.outbox
        assert isinstance(dead, ClaimingOutbox)
        assert dead.sweep_every == 2.0, "a replica sweeps every lease"
        await dead.add(entry("k1"), datetime.now(UTC))
        await dead.hold({"k1"})  # its sweep, just before it died
        postgres_schema.sql(
            "INSERT INTO conversation_leases (channel_id, lane, holder, token, expires_at)"
            f" VALUES ('telegram', '42', '{stores.replica}', 1, now() - interval '1 second')"
        )
        taker = ClaimingOutbox(db, "taker", span=30)
        assert [r.id for r in await taker.pending(TELEGRAM)] == ["k1"]
