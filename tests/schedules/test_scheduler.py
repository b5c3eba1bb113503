"""The scheduler over SQLite: a missed job runs once after a restart, a run is claimed
before it starts (at most once, even after a crash mid-run), and a new schedule wakes
the scheduler."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import anyio
import pytest

from tests.schedules.conftest import ManualClock, RecordingDelivery, open_db
from tests.subagents.conftest import ALICE, CATALOG
from thalos_bot.domain.address import Address
from thalos_bot.providers.scripted import Fail, ScriptedProvider
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.schedules.scheduler import Scheduler
from thalos_bot.schedules.store import NewSchedule, ScheduleStore
from thalos_bot.storage.database import Database
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.subagents.runner import SubagentRunner

pytestmark = pytest.mark.anyio

BERLIN = ZoneInfo("Europe/Berlin")
CHAT = Address.parse("telegram:4242")


def daily_nine(task: str = "Summarise my notes.") -> NewSchedule:
    return NewSchedule(
        owner=ALICE,
        agent_id="researcher",
        task=task,
        deliver_to=CHAT,
        cron="0 9 * * *",
        timezone="Europe/Berlin",
    )


@asynccontextmanager
async def daemon(
    db: Database, clock: ManualClock, provider: ScriptedProvider | None = None
) -> AsyncIterator[tuple[Scheduler, RecordingDelivery, ScriptedProvider]]:
    """The scheduler as the daemon runs it: started, then cancelled at shutdown."""
    provider = provider or ScriptedProvider()
    delivery = RecordingDelivery()
    async with Runtime(
        catalog=CATALOG,
        store=SqliteSessionStore(db),
        provider=provider,
        settings=RuntimeSettings(model="m"),
    ) as runtime:
        scheduler = Scheduler(ScheduleStore(db), SubagentRunner(runtime), delivery, clock=clock)
        async with anyio.create_task_group() as group:
            group.start_soon(scheduler.run)
            yield scheduler, delivery, provider
            group.cancel_scope.cancel()


async def test_a_job_missed_while_down_runs_once_at_start_up(tmp_path: Path) -> None:
    clock = ManualClock(datetime(2026, 6, 1, 8, 0, tzinfo=BERLIN))
    db = await open_db(tmp_path / "thalos.db")
    created = await ScheduleStore(db).create(daily_nine(), clock())
    await db.aclose()
    # The daemon is down for three mornings, and starts again at noon on the fourth day.
    clock.now = datetime(2026, 6, 4, 12, 0, tzinfo=BERLIN)
    db = await open_db(tmp_path / "thalos.db")
    try:
        async with daemon(db, clock) as (_, delivery, provider):
            await delivery.wait_for(1)
        row = await ScheduleStore(db).get(created.id)
    finally:
        await db.aclose()
    assert [d.text for d in delivery.sent] == ["You said: Summarise my notes."]
    assert len(provider.requests) == 1
    assert row is not None
    assert row.runs == 1
    assert row.next_run == datetime(2026, 6, 5, 9, 0, tzinfo=BERLIN)


async def test_a_run_claimed_before_a_crash_is_not_run_again(tmp_path: Path) -> None:
    clock = ManualClock(datetime(2026, 6, 1, 8, 0, tzinfo=BERLIN))
    db = await open_db(tmp_path / "thalos.db")
    store = ScheduleStore(db)
    once = await store.create(
        NewSchedule(ALICE, "researcher", "Once.", CHAT, at=datetime(2026, 6, 1, 9, tzinfo=BERLIN)),
        clock(),
    )
    daily = await store.create(daily_nine(), clock())
    clock.now = datetime(2026, 6, 1, 9, 30, tzinfo=BERLIN)
    claimed = await store.claim_due(clock())  # the daemon claims both ... and dies
    assert {s.id for s in claimed} == {once.id, daily.id}
    await db.aclose()
    clock.advance(minutes=1)
    db = await open_db(tmp_path / "thalos.db")
    try:
        store = ScheduleStore(db)
        async with (
            daemon(db, clock) as (scheduler, delivery, provider),
            anyio.create_task_group() as runs,
        ):
            again = await scheduler.start_due(runs)
        after_once, after_daily = await store.get(once.id), await store.get(daily.id)
    finally:
        await db.aclose()
    assert again == []
    assert delivery.sent == []
    assert provider.requests == []
    assert after_once is not None
    assert after_once.state == "done"
    assert after_daily is not None
    assert after_daily.next_run == datetime(2026, 6, 2, 9, 0, tzinfo=BERLIN)


async def test_a_new_schedule_wakes_the_sleeping_scheduler(db: Database) -> None:
    clock = ManualClock()
    async with daemon(db, clock) as (scheduler, delivery, _):
        # Nothing is scheduled: the scheduler sleeps (an hour at most) until woken.
        await ScheduleStore(db).create(
            NewSchedule(ALICE, "researcher", "Ping.", CHAT, at=clock.now.replace(hour=23)),
            clock(),
        )
        clock.now = clock.now.replace(hour=23, minute=1)
        scheduler.wake()
        await delivery.wait_for(1)
    assert delivery.sent[0].text == "You said: Ping."
    assert delivery.sent[0].kind == "answer"
    assert (delivery.sent[0].channel_id, delivery.sent[0].conversation_id) == (
        CHAT.channel_id,
        CHAT.conversation_id,
    )


async def test_a_failed_run_is_reported_to_the_conversation_as_a_notice(db: Database) -> None:
    clock = ManualClock(datetime(2026, 6, 1, 8, 0, tzinfo=BERLIN))
    provider = ScriptedProvider([[Fail("secret upstream detail")]])
    await ScheduleStore(db).create(daily_nine("Report."), clock())
    clock.now = clock.now.replace(hour=9, minute=5)
    async with daemon(db, clock, provider) as (_, delivery, _):
        await delivery.wait_for(1)
    [notice] = delivery.sent
    assert notice.kind == "notice"
    assert "did not finish" in notice.text
    assert "secret upstream detail" not in notice.text


async def test_each_run_keeps_its_result_for_the_dashboard(db: Database) -> None:
    clock = ManualClock(datetime(2026, 6, 1, 8, 0, tzinfo=BERLIN))
    provider = ScriptedProvider([[Fail("secret upstream detail")]])
    store = ScheduleStore(db)
    failing = await store.create(daily_nine("Report."), clock())
    assert failing.last_result is None
    clock.now = clock.now.replace(hour=9, minute=5)
    async with daemon(db, clock, provider) as (scheduler, delivery, _):
        await delivery.wait_for(1)
        failed = await store.get(failing.id)
        assert failed is not None
        assert failed.last_result == "failed: the model could not answer"
        assert failed.last_finished == clock()
        clock.now = clock.now.replace(day=2, hour=9, minute=1)
        scheduler.wake()
        await delivery.wait_for(2)
        worked = await store.get(failing.id)
        assert worked is not None
        assert (worked.last_result, worked.last_finished) == ("ok", clock())


async def test_a_cancelled_schedule_never_runs(db: Database) -> None:
    clock = ManualClock(datetime(2026, 6, 1, 8, 0, tzinfo=BERLIN))
    store = ScheduleStore(db)
    job = await store.create(daily_nine(), clock())
    assert await store.cancel(job.id, owner="mallory") is False
    assert await store.cancel(job.id, owner=ALICE.id) is True
    clock.now = clock.now.replace(hour=10)
    assert await store.claim_due(clock()) == []


async def test_a_host_runs_only_the_schedules_of_its_open_channels(db: Database) -> None:
    clock = ManualClock(datetime(2026, 6, 1, 8, 0, tzinfo=BERLIN))
    store = ScheduleStore(db)
    telegram = await store.create(daily_nine("For the phone."), clock())
    console = await store.create(
        NewSchedule(
            ALICE,
            "researcher",
            "For the terminal.",
            Address.parse("console"),
            cron="0 9 * * *",
            timezone="Europe/Berlin",
        ),
        clock(),
    )
    clock.now = datetime(2026, 6, 1, 9, 30, tzinfo=BERLIN)
    # A `thalos-bot chat` (console only) leaves the Telegram job to the daemon.
    assert [s.id for s in await store.claim_due(clock(), {"console"})] == [console.id]
    assert await store.next_due({"console"}) == datetime(2026, 6, 2, 9, 0, tzinfo=BERLIN)
    assert [s.id for s in await store.claim_due(clock(), {"telegram", "console"})] == [telegram.id]
