"""Connection leases (one owner per platform connection), on a real PostgreSQL.

A stalled owner is made by ending its lease in the database (the server's clock is the
only one leases read), never by sleeping past it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import psycopg
import pytest

from tests.storage.conftest import PostgresSchema
from thalos_bot.channels.connection_state import RowChange
from thalos_bot.cluster.connection_rows import PgConnectionRows
from thalos_bot.cluster.connections import ConnectionLease, owners
from thalos_bot.service.schema import PG_ALL_MIGRATIONS
from thalos_bot.storage.pg.database import PgDatabase

pytestmark = pytest.mark.anyio


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PgDatabase]:
    async with await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS) as opened:
        yield opened


def lease(db: PgDatabase, replica: str, span: float = 30.0) -> ConnectionLease:
    return ConnectionLease(db, "discord", replica, span)


async def test_one_owner_among_replicas_taking_at_once(db: PgDatabase) -> None:
    replicas = [lease(db, f"r{i}") for i in range(5)]
    won: list[bool] = [False] * len(replicas)

    async def take(index: int) -> None:
        won[index] = await replicas[index].acquire()

    async with anyio.create_task_group() as group:
        for index in range(len(replicas)):
            group.start_soon(take, index)
    assert won.count(True) == 1
    owner = replicas[won.index(True)]
    assert owner.fresh()
    assert await owner.renew()
    assert [o.holder for o in await owners(db)] == [owner.replica]


async def test_release_hands_over_at_once(db: PgDatabase) -> None:
    first, second = lease(db, "a"), lease(db, "b")
    assert await first.acquire()
    assert not await second.acquire()
    await first.release()
    assert not first.fresh()
    assert await second.acquire()
    assert second.token == 2
    (owner,) = await owners(db)
    assert owner.holder == "b"
    assert owner.taken_over_at is None  # handed over, not taken over


async def test_a_stalled_owner_is_fenced_after_a_takeover(
    db: PgDatabase, postgres_schema: PostgresSchema
) -> None:
    stalled, standby = lease(db, "a"), lease(db, "b")
    assert await stalled.acquire()
    assert not await standby.acquire()
    postgres_schema.sql("UPDATE connection_leases SET expires_at = now() - interval '1 second'")
    assert await standby.acquire()
    assert not await stalled.renew()  # it wakes up: its token is gone
    assert not stalled.fresh()
    await stalled.release()  # a stale release leaves the new owner alone
    assert await standby.renew()
    (owner,) = await owners(db)
    assert owner.holder == "b"
    assert owner.taken_over_at is not None
    assert not owner.expired


async def test_fresh_is_false_once_a_renewal_is_overdue(db: PgDatabase) -> None:
    short = lease(db, "a", span=1.0)
    assert await short.acquire()
    assert short.fresh()
    await anyio.sleep(1.1)
    assert not short.fresh()
    assert not await short.renew()  # ran out by the server's clock too


async def test_a_message_is_handed_over_once_whichever_owner_sees_it(db: PgDatabase) -> None:
    first, second = lease(db, "a"), lease(db, "b")
    assert await first.first_sight("dm-1", "1001")
    assert not await second.first_sight("dm-1", "1001")  # caught up again by another owner
    assert await second.first_sight("dm-2", "1001")  # another conversation's message
    assert await ConnectionLease(db, "slack", "b", 30.0).first_sight("dm-1", "1001")


async def test_the_position_goes_to_the_next_owner_and_a_stale_owner_cannot_move_it(
    db: PgDatabase, postgres_schema: PostgresSchema
) -> None:
    stalled, standby = lease(db, "a"), lease(db, "b")
    assert await stalled.load_state() is None
    assert not await stalled.save_state({"next_batch": "s0"})  # not held: nothing written
    assert await stalled.acquire()
    assert await stalled.save_state({"next_batch": "s1"})
    postgres_schema.sql("UPDATE connection_leases SET expires_at = now() - interval '1 second'")
    assert await standby.acquire()
    assert await standby.load_state() == {"next_batch": "s1"}  # goes on from there
    assert await standby.save_state({"next_batch": "s2"})
    assert not await stalled.save_state({"next_batch": "s1-late"})  # fenced
    assert await standby.load_state() == {"next_batch": "s2"}
    assert await ConnectionLease(db, "slack", "b", 30.0).load_state() is None


async def test_an_owner_stopped_inside_a_fenced_write_does_not_hold_the_takeover(
    postgres_url: str,
) -> None:
    """An owner stopped (SIGSTOP) between two statements of a write fenced by its lease
    holds the lease's row ``FOR SHARE`` for as long as it is stopped; the server ends
    its session after ``stalled_transaction``, and a standby takes the lease over."""
    async with await PgDatabase.open(
        postgres_url, migrations=PG_ALL_MIGRATIONS, stalled_transaction=1.0
    ) as db:
        owner, standby = lease(db, "a", span=1.0), lease(db, "b", span=1.0)
        assert await owner.acquire()
        locked, woke = anyio.Event(), anyio.Event()
        ended: list[BaseException] = []

        async def stopped_mid_write() -> None:
            try:
                async with db.transaction() as conn:
                    await conn.execute(
                        "SELECT token FROM connection_leases WHERE channel_id = %s FOR SHARE",
                        (owner.channel_id,),
                    )
                    locked.set()
                    await woke.wait()  # to the server: a client gone quiet mid-transaction
                    await conn.execute("SELECT 1")
            except psycopg.Error as exc:
                ended.append(exc)

        async with anyio.create_task_group() as group:
            group.start_soon(stopped_mid_write)
            await locked.wait()
            with anyio.fail_after(8):  # without the bound: until the owner wakes up
                while not await standby.acquire():
                    await anyio.sleep(0.1)
            woke.set()
        assert standby.token == 2
        assert ended, "the stopped owner's transaction was ended by the server"
        assert not await owner.renew()  # and the owner, awake, is fenced


async def test_a_takeover_that_waited_for_a_stopped_owners_lock_holds_a_whole_lease(
    postgres_url: str,
) -> None:
    """The owner's lease has run out while it is stopped inside a fenced write (its
    row read ``FOR SHARE``): the standby's try waits for that lock until the server ends
    the stopped session, then takes the lease. Its span counts from then: it is sure of
    it and renews it. Counted from the try's start, the lease had run out before it was
    taken, so the new owner gave it up at its first renewal and took it again."""
    async with await PgDatabase.open(
        postgres_url, migrations=PG_ALL_MIGRATIONS, stalled_transaction=1.5
    ) as db:
        owner, standby = lease(db, "a", span=1.0), lease(db, "b", span=1.0)
        assert await owner.acquire()
        async with db.transaction() as conn:
            await conn.execute(
                "UPDATE connection_leases SET expires_at = now() - interval '1 second'"
            )
        locked, woke = anyio.Event(), anyio.Event()

        async def stopped_mid_write() -> None:
            with contextlib.suppress(psycopg.Error):  # the server ends it
                async with db.transaction() as conn:
                    await conn.execute(
                        "SELECT token FROM connection_leases WHERE channel_id = %s FOR SHARE",
                        (owner.channel_id,),
                    )
                    locked.set()
                    await woke.wait()
                    await conn.execute("SELECT 1")

        async with anyio.create_task_group() as group:
            group.start_soon(stopped_mid_write)
            await locked.wait()
            with anyio.fail_after(8):
                assert await standby.acquire()  # after waiting for the stopped owner's lock
            woke.set()
        assert standby.fresh()
        assert await standby.renew()


async def test_a_position_saved_on_a_session_the_server_ended_is_not_kept_and_raises_nothing(
    postgres_url: str,
) -> None:
    """The owner stopped inside the save of its position past ``stalled_transaction``:
    awake, that save finds its session ended. It says so and returns False (nothing
    written), as a fenced one does; before, the error ended the channel, and with it the
    daemon."""
    async with await PgDatabase.open(
        postgres_url, migrations=PG_ALL_MIGRATIONS, stalled_transaction=0.5
    ) as db:
        owner = lease(db, "a")
        assert await owner.acquire()
        assert await owner.save_state({"next_batch": "s1"})
        with stopped_inside(db):
            assert not await owner.save_state({"next_batch": "s2"})
        assert await owner.load_state() == {"next_batch": "s1"}


@contextmanager
def stopped_inside(db: PgDatabase) -> Iterator[None]:
    """Every transaction of ``db`` begun here goes quiet for 1.5 s after its first
    statement, as one whose process was stopped there."""
    transaction = db.transaction

    @asynccontextmanager
    async def stalling() -> AsyncIterator[Any]:
        async with transaction() as conn:
            await conn.execute("SELECT 1")
            await anyio.sleep(1.5)  # to the server: a client gone quiet mid-transaction
            yield conn

    db.transaction = stalling  # type: ignore[method-assign]
    try:
        yield
    finally:
        db.transaction = transaction  # type: ignore[method-assign]


async def test_rows_written_on_a_session_the_server_ended_are_refused_once_the_lease_is_unsure(
    postgres_url: str,
) -> None:
    """Matrix's encryption rows, written by an owner stopped inside the write past both
    its lease and ``stalled_transaction``: awake, the write is refused like a fenced one
    (False: the channel stands by, another replica has the connection); before, the
    error ended the channel and the daemon. While the lease is surely held, the same
    error is the store's failure and is raised."""
    async with await PgDatabase.open(
        postgres_url, migrations=PG_ALL_MIGRATIONS, stalled_transaction=0.5
    ) as db:
        owner = lease(db, "a", span=1.0)
        rows = PgConnectionRows(db, owner)
        assert await owner.acquire()
        assert await rows.save_rows(RowChange([("olm", "c", "s", b"1")]))
        with stopped_inside(db):
            assert not await rows.save_rows(RowChange([("olm", "c", "s", b"2")]))
        assert await rows.load_rows() == [("olm", "c", "s", b"1")]

        sure = lease(db, "b", span=30.0)
        sure_rows = PgConnectionRows(db, sure)
        await owner.release()
        assert await sure.acquire()
        with stopped_inside(db), pytest.raises(psycopg.Error):
            await sure_rows.save_rows(RowChange([("olm", "c", "s", b"3")]))
