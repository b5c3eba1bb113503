"""``0501_schedule_pause`` on both databases: a schedule stored before it keeps what it
had, reads with no last result, and may then be paused (the SQLite table is rebuilt;
PostgreSQL widens the state check in place)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import pytest

from thalos_bot.schedules.store import ScheduleStorage, ScheduleStore
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.migrations import Migration
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.pg.schedules import PgScheduleStore
from thalos_bot.storage.pg.schema import PG_MIGRATIONS

pytestmark = pytest.mark.anyio

PAUSE = "0501_schedule_pause"
Stage = Literal["before", "after"]
Opener = Callable[[Stage], AbstractAsyncContextManager[ScheduleStorage]]
"""Opens the database with all migrations but ``PAUSE`` (``before``, inserting the old
row) or with every one (``after``)."""

ROW = (
    "INSERT INTO schedules (id, origin, owner, roles, agent_id, task, cron, at, timezone,"
    " channel_id, conversation_id, state, next_run, last_started, runs, created_at) VALUES"
    " ('sch_old', 'tool', 'alice', '[\"ops\"]', 'researcher', 'Report.', '0 9 * * *', NULL,"
    " 'UTC', 'telegram', '42', 'active', {next}, NULL, 3, {created})"
)


def _without_pause(migrations: list[Migration]) -> list[Migration]:
    return [m for m in migrations if m.name != PAUSE]


@pytest.fixture(params=["sqlite", "postgres"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    if request.param == "sqlite":

        @asynccontextmanager
        async def sqlite(stage: Stage) -> AsyncIterator[ScheduleStorage]:
            migrations = ALL_MIGRATIONS if stage == "after" else _without_pause(ALL_MIGRATIONS)
            async with await Database.open(tmp_path / "t.db", migrations=migrations) as db:
                if stage == "before":
                    async with db.transaction() as conn:
                        await conn.execute(
                            ROW.format(
                                next="'2026-12-02T09:00:00.000000+00:00'",
                                created="'2026-11-01T09:00:00.000000+00:00'",
                            )
                        )
                yield ScheduleStore(db)

        return sqlite
    url = request.getfixturevalue("postgres_url")

    @asynccontextmanager
    async def postgres(stage: Stage) -> AsyncIterator[ScheduleStorage]:
        migrations = PG_MIGRATIONS if stage == "after" else _without_pause(PG_MIGRATIONS)
        async with await PgDatabase.open(url, migrations=migrations) as db:
            if stage == "before":
                async with db.transaction() as conn:
                    await conn.execute(
                        ROW.format(
                            next="'2026-12-02T09:00:00+00:00'",
                            created="'2026-11-01T09:00:00+00:00'",
                        )
                    )
            yield PgScheduleStore(db)

    return postgres


async def test_a_schedule_from_before_keeps_everything_and_can_be_paused(
    open_store: Opener,
) -> None:
    async with open_store("before"):
        pass
    async with open_store("after") as store:
        old = await store.get("sch_old")
        assert old is not None
        assert (old.state, old.runs, old.roles, old.cron) == (
            "active",
            3,
            frozenset({"ops"}),
            "0 9 * * *",
        )
        assert old.next_run == datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
        assert (old.last_result, old.last_finished) == (None, None)
        assert await store.pause("sch_old")
        assert [(s.id, s.state) for s in await store.listing()] == [("sch_old", "paused")]
