"""``0501_schedule_pause`` rebuilds the SQLite schedules table: the rows of a database
made before it keep everything they had, and may then be paused."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.subagents.conftest import ALICE
from thalos_bot.domain.address import Address
from thalos_bot.schedules.store import NewSchedule, ScheduleStore
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


async def test_rows_from_before_the_rebuild_survive_it(tmp_path: Path) -> None:
    before = [m for m in ALL_MIGRATIONS if m.name != "0501_schedule_pause"]
    path = tmp_path / "old.db"
    async with await Database.open(path, migrations=before) as db, db.transaction() as conn:
        await conn.execute(
            "INSERT INTO schedules (id, origin, owner, roles, agent_id, task, cron, at,"
            " timezone, channel_id, conversation_id, state, next_run, last_started, runs,"
            " created_at) VALUES ('sch_old', 'tool', 'alice', '[\"ops\"]', 'researcher',"
            " 'Report.', '0 9 * * *', NULL, 'UTC', 'telegram', '42', 'active',"
            " '2026-12-02T09:00:00.000000+00:00', '2026-12-01T09:00:00.000000+00:00', 3,"
            " '2026-11-01T09:00:00.000000+00:00')"
        )
    async with await Database.open(path, migrations=ALL_MIGRATIONS) as db:
        assert db.applied_on_open == ("0501_schedule_pause",)
        store = ScheduleStore(db)
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
        new = await store.create(
            NewSchedule(
                ALICE, "researcher", "Ping.", Address.parse("telegram:42"), cron="0 * * * *"
            ),
            NOW,
        )
        assert [s.id for s in await store.listing()] == [new.id, "sch_old"]
