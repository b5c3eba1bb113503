"""A conversation lease another live replica holds, on a real PostgreSQL: every replica
hears of each message of the lane, and the ones not holding it are refused without
locking the lease's row (a lock is a write whose commit waits for the disk, and it
would wait for the holder's own commits), and on a connection channel in one round
trip."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager

import anyio
import psycopg
import pytest

from tests.storage.conftest import PostgresSchema
from thalos_bot.cluster.leases import LeaseBook
from thalos_bot.cluster.seen_lanes import SeenLeaseBook
from thalos_bot.storage.pg.database import Connection, PgDatabase

pytestmark = pytest.mark.anyio
CHANNEL = "slack"


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PgDatabase]:
    async with await PgDatabase.open(postgres_url) as opened:
        yield opened


def row_locker(schema: PostgresSchema) -> str:
    """The transaction id that last locked the lease's row (its ``xmax``)."""
    out = schema.sql("SELECT 'xmax=' || xmax::text FROM conversation_leases WHERE lane = 'D1'")
    return out.split("xmax=")[1].split()[0]


async def test_a_lane_held_by_another_live_replica_is_refused_without_a_lock(
    db: PgDatabase, postgres_url: str, postgres_schema: PostgresSchema
) -> None:
    holder = LeaseBook(db, CHANNEL, "replica-a", 15)
    other = LeaseBook(db, CHANNEL, "replica-b", 15)
    lease = await holder.acquire("D1")
    assert lease is not None
    before = row_locker(postgres_schema)
    assert await other.acquire("D1") is None
    assert row_locker(postgres_schema) == before, "the refused replica locked the row"
    async with await psycopg.AsyncConnection.connect(postgres_url) as committing:
        # The holder's turn is being committed: its fence holds the lane FOR SHARE.
        await committing.execute("SELECT 1 FROM conversation_leases WHERE lane = 'D1' FOR SHARE")
        with anyio.fail_after(10):  # a lock would wait for that commit
            assert await other.acquire("D1") is None
        await committing.rollback()
    assert await holder.acquire("D1") == lease  # the holder keeps it, token and all


async def test_an_expired_or_released_lane_is_still_taken_over(
    db: PgDatabase, postgres_schema: PostgresSchema
) -> None:
    holder = LeaseBook(db, CHANNEL, "replica-a", 15)
    other = LeaseBook(db, CHANNEL, "replica-b", 15)
    first = await holder.acquire("D1")
    assert first is not None
    postgres_schema.sql("UPDATE conversation_leases SET expires_at = now() WHERE lane = 'D1'")
    taken = await other.acquire("D1")
    assert taken is not None
    assert taken.token == first.token + 1
    assert await other.release() == 1
    again = await holder.acquire("D1")
    assert again is not None
    assert again.token == taken.token + 1


async def test_a_replica_hearing_of_a_conversation_another_holds_looks_in_one_statement(
    db: PgDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection channel's conversation (turns on any replica): whether it is
    owner-only and whether another replica holds it are one statement, on its own (no
    BEGIN, no COMMIT), and the replica gives up without waiting its place in the
    conversation's order. Any transaction here fails the test."""
    holder = SeenLeaseBook(db, CHANNEL, "replica-a", 15)
    assert await holder.acquire("D1") is not None
    other = SeenLeaseBook(db, CHANNEL, "replica-b", 15)
    other.alone, other.senders = False, ("replica-a", "replica-b", "replica-c")
    other.wait_before = lambda lane: 3600.0  # type: ignore[method-assign]
    statements: list[str] = []
    single = db.single

    def once() -> AbstractAsyncContextManager[Connection]:
        statements.append("single")
        return single()

    def transaction() -> AbstractAsyncContextManager[Connection]:
        raise AssertionError("a transaction: BEGIN and COMMIT around the look")

    monkeypatch.setattr(db, "single", once)
    monkeypatch.setattr(db, "transaction", transaction)
    monkeypatch.setattr(db, "read", transaction)
    with anyio.fail_after(10):  # it would wait an hour for its place
        assert await other.acquire("D1") is None
    assert statements == ["single"]
