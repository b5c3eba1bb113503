"""A channel whose opening outlasts its connection lease (Matrix's encryption start:
keys read, uploaded, cross-signing checked) keeps the lease: the standby renews it while
the channel opens, on a real PostgreSQL. One that loses the lease all the same while it
opens stands by again, and opens once the lease is free."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from thalos_bot.channels.ports import InboundMessage
from thalos_bot.channels.registry import ChannelPair
from thalos_bot.cluster.connection_rows import PgConnectionRows
from thalos_bot.cluster.connections import ConnectionLease
from thalos_bot.domain.ids import ChannelId
from thalos_bot.service.schema import PG_ALL_MIGRATIONS
from thalos_bot.service.standby import Standby
from thalos_bot.storage.pg.database import PgDatabase, fetch_one
from thalos_bot_matrix import PICKLE_KEY_ENV, crypto_shared

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

SPAN = 1.0


class Quiet:
    """A channel source that receives nothing until it is closed."""

    channel_id = ChannelId("slow")

    def __init__(self) -> None:
        self.closed = anyio.Event()

    async def messages(self) -> AsyncIterator[InboundMessage]:
        await self.closed.wait()
        nothing: tuple[InboundMessage, ...] = ()
        for message in nothing:
            yield message


async def expiry(db: PgDatabase) -> datetime:
    async with db.read() as conn:
        row = await fetch_one(conn, "SELECT expires_at FROM connection_leases", ())
    assert row is not None
    value: datetime = row["expires_at"]
    return value


async def test_the_lease_is_renewed_while_a_slow_channel_opens(postgres_url: str) -> None:
    async with await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS) as db:
        lease = ConnectionLease(db, "slow", "r1", SPAN)
        source = Quiet()

        @asynccontextmanager
        async def opened() -> AsyncIterator[ChannelPair]:
            # Opens for longer than two spans of the lease (by the server's clock: the
            # lease's end moves on only if someone renews it meanwhile).
            first = await expiry(db)
            while await expiry(db) < first + timedelta(seconds=2 * SPAN):
                await anyio.sleep(0.05)
            adapter: Any = object()
            try:
                yield ChannelPair(source, adapter)
            finally:
                source.closed.set()

        standby = Standby(ChannelId("slow"), opened, lease)
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                pair = await group.start(standby.run)
                assert pair is not None
                assert lease.fresh()
                assert await lease.renew(), "still this replica's after the long opening"
                standby.stop()


async def test_an_opening_that_hangs_lets_the_lease_go_to_another_replica(
    postgres_url: str,
) -> None:
    """This replica cannot reach the platform and its opening retries for ever: the
    lease is kept for it only OPENING_SPANS spans, then another replica can take it."""
    async with await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS) as db:
        span = 1.0
        lease = ConnectionLease(db, "hang", "r1", span)
        other = ConnectionLease(db, "hang", "r2", span)

        @asynccontextmanager
        async def hanging() -> AsyncIterator[ChannelPair]:
            await anyio.sleep_forever()
            yield ChannelPair(Quiet(), object())  # type: ignore[arg-type]

        standby = Standby(ChannelId("hang"), hanging, lease)
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(partial(standby.run, task_status=anyio.TASK_STATUS_IGNORED))
                while lease.token is None:
                    await anyio.sleep(0.02)
                await anyio.sleep(2 * span)
                assert not await other.acquire(), "kept while it opens, at first"
                while not await other.acquire():
                    await anyio.sleep(span / 3)
                assert other.token is not None
                group.cancel_scope.cancel()


async def test_a_lease_lost_while_the_channel_opens_stands_by_and_takes_it_again_later(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Matrix's encryption start writes the device's keys fenced by the lease: when this
    replica stalled past its lease as it opened and another one took the lease, the write
    is refused (ConnectionLostError). That is no failure of the channel: the replica
    stands by (even at start-up, where a failure to open stops the daemon), and opens the
    channel again once the lease is free."""
    monkeypatch.setenv(PICKLE_KEY_ENV, "a-pickle-key-for-the-standby-test")
    async with await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS) as db:
        lease = ConnectionLease(db, "matrix", "r1", SPAN)
        other = ConnectionLease(db, "matrix", "r2", SPAN)
        openings: list[int | None] = []

        @asynccontextmanager
        async def opened() -> AsyncIterator[ChannelPair]:
            openings.append(lease.token)
            if len(openings) == 1:  # the stall: run out and taken, before the keys' write
                async with db.transaction() as conn:
                    await conn.execute(
                        "UPDATE connection_leases SET expires_at = now() - interval '1 second'"
                    )
                assert await other.acquire()
            rows = PgConnectionRows(db, lease)
            store = await crypto_shared.opened(rows, tmp_path, "@bot:example.org", "BOTDEVICE")
            source = Quiet()
            adapter: Any = object()
            try:
                yield ChannelPair(source, adapter)
            finally:
                source.closed.set()
                store.close()

        attached = anyio.Event()

        async def attach(pair: ChannelPair) -> None:
            attached.set()

        standby = Standby(ChannelId("matrix"), opened, lease)
        standby.serve(attach, lambda pair: None)
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                assert await group.start(standby.run) is None, "standing by, not stopped"
                assert lease.token is None
                assert other.token is not None
                await other.release()  # the other replica stops cleanly
                await attached.wait()
                assert len(openings) == 2
                assert openings[1] is not None
                assert openings[1] > (openings[0] or 0)
                assert lease.fresh()
                standby.stop()
