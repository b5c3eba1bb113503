"""A connection channel's 429 waits in the shared store, on a real PostgreSQL: the
longer of two waits is kept, each channel has its own, and a wait that ran out (made so
in the database, never by sleeping) is no longer read."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from thalos_bot.cluster.connection_holds import ConnectionHolds
from thalos_bot.service.schema import PG_ALL_MIGRATIONS
from thalos_bot.storage.pg.database import PgDatabase

pytestmark = pytest.mark.anyio


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PgDatabase]:
    async with await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS) as opened:
        yield opened


async def test_the_longer_wait_is_kept_per_channel_and_chat(db: PgDatabase) -> None:
    slack = ConnectionHolds(db, "slack")
    assert 29 < await slack.hold("D1", 30) <= 30
    assert 29 < await slack.hold("D1", 5) <= 30  # a shorter wait told later: still 30
    assert 59 < await slack.hold("D1/171.5", 60) <= 60
    running = await slack.running()
    assert set(running) == {"D1", "D1/171.5"}
    assert await ConnectionHolds(db, "discord").running() == {}


async def test_a_wait_that_ran_out_is_not_read(db: PgDatabase) -> None:
    slack = ConnectionHolds(db, "slack")
    await slack.hold("D1", 30)
    await slack.hold("D2", 30)
    async with db.transaction() as conn:
        await conn.execute(
            "UPDATE connection_holds SET retry_until = now() WHERE conversation = 'D1'"
        )
    assert set(await slack.running()) == {"D2"}
