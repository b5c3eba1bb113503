"""The schedule store, run against SQLite and PostgreSQL: created, listed, cancelled,
claimed once when due (also by several replicas at once), and the operator's
``[[schedules]]`` kept in step."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

from thalos_bot.domain.address import Address
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.schedules.store import NewSchedule, ScheduleError, ScheduleStorage, ScheduleStore
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.pg.schedules import PgScheduleStore

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 12, 1, 8, 30, tzinfo=UTC)
ALICE = SecurityContext.of("alice", ["ops"])
CHAT = Address(ChannelId("telegram"), ConversationId("42"))
CONSOLE = Address(ChannelId("console"), ConversationId("local"))


Opener = Callable[[], AbstractAsyncContextManager[ScheduleStorage]]


@pytest.fixture(params=["sqlite", "postgres"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """Opens the same database again (another replica) each time it is called."""
    if request.param == "sqlite":

        @asynccontextmanager
        async def sqlite() -> AsyncIterator[ScheduleStorage]:
            async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:
                yield ScheduleStore(db)

        return sqlite
    url = request.getfixturevalue("migrated_url")

    @asynccontextmanager
    async def postgres() -> AsyncIterator[ScheduleStorage]:
        async with await PgDatabase.open(url, pool_size=3) as db:
            yield PgScheduleStore(db)

    return postgres


def _daily(schedule_id: str | None = None, **changes: object) -> NewSchedule:
    fields: dict[str, object] = {
        "owner": ALICE,
        "agent_id": "assistant",
        "task": "Summarise the news.",
        "deliver_to": CHAT,
        "cron": "0 9 * * *",
        "timezone": "Europe/Zurich",
        "id": schedule_id,
    }
    fields.update(changes)
    return NewSchedule(**fields)  # type: ignore[arg-type]


async def test_a_schedule_round_trips_and_lists_soonest_first(open_store: Opener) -> None:
    async with open_store() as store:
        daily = await store.create(_daily("sch_daily"), NOW)
        once_at = NOW + timedelta(minutes=5, microseconds=7)
        once = await store.create(
            _daily("sch_once", cron=None, at=once_at, deliver_to=CONSOLE), NOW
        )
        assert await store.get("sch_daily") == daily
        assert (daily.owner, daily.roles, daily.state, daily.runs) == (
            "alice",
            frozenset({"ops"}),
            "active",
            0,
        )
        assert daily.next_run == datetime(2026, 12, 1, 8, 0, tzinfo=UTC) + timedelta(days=1)
        assert (once.at, once.next_run, once.timing) == (once_at, once_at, "once")
        assert [s.id for s in await store.active()] == ["sch_once", "sch_daily"]
        assert [s.id for s in await store.active(deliver_to=CHAT)] == ["sch_daily"]
        assert await store.active(owner="bob") == []
        assert await store.next_due() == once_at
        assert await store.next_due(["telegram"]) == daily.next_run
        assert await store.get("sch_nobody") is None


async def test_a_time_in_the_past_is_refused(open_store: Opener) -> None:
    async with open_store() as store:
        with pytest.raises(ScheduleError, match="already passed"):
            await store.create(_daily(cron=None, at=NOW - timedelta(seconds=1)), NOW)
        assert await store.active() == []


async def test_only_the_owner_cancels_and_a_cancelled_one_is_never_due(
    open_store: Opener,
) -> None:
    async with open_store() as store:
        await store.create(_daily("sch_a"), NOW)
        assert not await store.cancel("sch_a", owner="bob")
        assert await store.cancel("sch_a", owner="alice")
        assert not await store.cancel("sch_a"), "already cancelled"
        cancelled = await store.get("sch_a")
        assert cancelled is not None
        assert (cancelled.state, cancelled.next_run) == ("cancelled", None)
        assert await store.next_due() is None
        assert await store.claim_due(NOW + timedelta(days=30)) == []


async def test_claiming_moves_a_schedule_past_now_or_finishes_it(open_store: Opener) -> None:
    async with open_store() as store:
        daily = await store.create(_daily("sch_daily"), NOW)
        await store.create(_daily("sch_once", cron=None, at=NOW + timedelta(hours=1)), NOW)
        await store.create(_daily("sch_console", deliver_to=CONSOLE), NOW)
        assert await store.claim_due(NOW) == [], "nothing is due yet"
        later = NOW + timedelta(days=3)  # missed three mornings: runs once
        claimed = await store.claim_due(later, ["telegram"])
        assert [s.id for s in claimed] == ["sch_once", "sch_daily"]
        assert claimed[1] == daily, "what is returned is the row as it was when due"
        assert await store.claim_due(later, ["telegram"]) == []
        after = await store.get("sch_daily")
        once = await store.get("sch_once")
        assert after is not None
        assert once is not None
        assert (after.state, after.runs, after.last_started) == ("active", 1, later)
        assert after.next_run == datetime(2026, 12, 5, 8, 0, tzinfo=UTC)
        assert (once.state, once.next_run, once.runs) == ("done", None, 1)
        console = await store.get("sch_console")
        assert console is not None
        assert console.runs == 0, "another channel's schedule is left alone"


async def test_the_configured_schedules_are_kept_in_step(open_store: Opener) -> None:
    async with open_store() as store:
        keep, change, drop = (
            _daily(f"cfg_{n}", origin="config") for n in ("keep", "change", "drop")
        )
        await store.sync_config([keep, change, drop], NOW)
        await store.claim_due(NOW + timedelta(days=1))
        kept_before = await store.get("cfg_keep")
        changed = _daily("cfg_change", origin="config", task="Something else.")
        await store.sync_config([keep, changed], NOW + timedelta(days=1, hours=1))
        assert await store.get("cfg_keep") == kept_before, "unchanged: keeps its next run"
        replaced = await store.get("cfg_change")
        dropped = await store.get("cfg_drop")
        assert replaced is not None
        assert dropped is not None
        assert (replaced.task, replaced.runs) == ("Something else.", 0)
        assert dropped.state == "cancelled"


async def test_schedules_due_at_once_are_claimed_once_across_replicas(
    open_store: Opener,
) -> None:
    async with open_store() as seed:
        for index in range(100):
            at = NOW + timedelta(minutes=1, seconds=index % 7)
            await seed.create(_daily(f"sch_{index:03}", cron=None, at=at), NOW)
    claimed: list[str] = []
    due = NOW + timedelta(minutes=2)

    async def replica() -> None:
        async with open_store() as store:
            for _ in range(3):
                claimed.extend(s.id for s in await store.claim_due(due))

    async with anyio.create_task_group() as group:
        for _ in range(3):
            group.start_soon(replica)
    assert sorted(claimed) == [f"sch_{index:03}" for index in range(100)], "each exactly once"


async def test_a_paused_schedule_is_not_claimed_until_resumed(open_store: Opener) -> None:
    async with open_store() as store:
        daily = await store.create(_daily("sch_daily"), NOW)
        assert daily.next_run is not None
        assert await store.pause("sch_daily")
        assert not await store.pause("sch_daily")  # already paused
        assert not await store.pause("sch_nothing")
        paused = await store.get("sch_daily")
        assert paused is not None
        assert (paused.state, paused.next_run) == ("paused", daily.next_run)
        assert await store.active() == []
        assert await store.next_due() is None
        later = daily.next_run + timedelta(days=2, hours=1)
        assert await store.claim_due(later) == []
        assert await store.resume("sch_daily", later)
        assert not await store.resume("sch_daily", later)  # active again
        resumed = await store.get("sch_daily")
        assert resumed is not None
        # The runs missed while paused are not made up: the next is after the resume.
        assert resumed.state == "active"
        assert resumed.next_run == datetime(2026, 12, 5, 8, 0, tzinfo=UTC)
        assert [s.id for s in await store.active()] == ["sch_daily"]


async def test_a_one_shot_resumed_after_its_time_runs_at_once(open_store: Opener) -> None:
    async with open_store() as store:
        at = NOW + timedelta(hours=1)
        await store.create(_daily("sch_once", cron=None, at=at), NOW)
        assert await store.pause("sch_once")
        assert await store.resume("sch_once", NOW + timedelta(minutes=5))
        early = await store.get("sch_once")
        assert early is not None
        assert early.next_run == at  # its own time, still ahead
        assert await store.pause("sch_once")
        assert await store.resume("sch_once", at + timedelta(hours=3))
        assert [s.id for s in await store.claim_due(at + timedelta(hours=3))] == ["sch_once"]


async def test_the_listing_orders_active_paused_then_done_and_leaves_out_cancelled(
    open_store: Opener,
) -> None:
    async with open_store() as store:
        await store.create(_daily("sch_tomorrow"), NOW)
        await store.create(_daily("sch_tonight", cron="0 23 * * *"), NOW)
        await store.create(_daily("sch_paused"), NOW)
        await store.create(_daily("sch_once", cron=None, at=NOW + timedelta(minutes=1)), NOW)
        await store.create(_daily("sch_gone"), NOW)
        assert await store.pause("sch_paused")
        assert await store.cancel("sch_gone")
        await store.claim_due(NOW + timedelta(minutes=2))
        listed = await store.listing()
        assert [(s.id, s.state) for s in listed] == [
            ("sch_tonight", "active"),
            ("sch_tomorrow", "active"),
            ("sch_paused", "paused"),
            ("sch_once", "done"),
        ]


async def test_a_paused_schedule_can_be_cancelled_and_the_last_result_is_kept(
    open_store: Opener,
) -> None:
    async with open_store() as store:
        await store.create(_daily("sch_daily"), NOW)
        await store.finish("sch_daily", "failed: it ran out of time", NOW + timedelta(hours=1))
        kept = await store.get("sch_daily")
        assert kept is not None
        assert kept.last_result == "failed: it ran out of time"
        assert kept.last_finished == NOW + timedelta(hours=1)
        assert await store.pause("sch_daily")
        assert await store.cancel("sch_daily")
        cancelled = await store.get("sch_daily")
        assert cancelled is not None
        assert (cancelled.state, cancelled.next_run) == ("cancelled", None)
        assert not await store.resume("sch_daily", NOW)
