"""A scheduled run runs with its person's roles as the configuration says now, not with
the roles the schedule was made with; a person removed from the configuration has their
schedules paused and is told so in the schedule's chat."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

from tests.schedules.conftest import ManualClock, RecordingDelivery, open_db
from tests.storage.backends import BACKENDS
from thalos_bot.domain.address import Address
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.people import People, Person, RoleBook
from thalos_bot.domain.pricing import PriceTable
from thalos_bot.domain.security import SecurityContext
from thalos_bot.runtime.limits import SpendingLimits
from thalos_bot.schedules.projection import Projection
from thalos_bot.schedules.scheduler import Scheduler
from thalos_bot.schedules.store import NewSchedule, ScheduleStore
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.pg.run_costs import PgRunCosts
from thalos_bot.storage.pg.schedules import PgScheduleStore
from thalos_bot.storage.pg.usage import PgUsageLedger
from thalos_bot.storage.run_costs import SqliteRunCosts
from thalos_bot.storage.usage import SqliteUsageLedger
from thalos_bot.subagents.outcome import RunResult

pytestmark = pytest.mark.anyio
CHAT = Address.parse("telegram:4242")


@dataclass
class Stored:
    """The schedules, the runs' costs and the usage ledger on one database."""

    schedules: ScheduleStore | PgScheduleStore
    costs: SqliteRunCosts
    ledger: SqliteUsageLedger | PgUsageLedger


@pytest.fixture(params=BACKENDS)
async def db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stored]:
    """Every case on SQLite and on PostgreSQL."""
    if request.param == "postgres":
        async with await PgDatabase.open(request.getfixturevalue("migrated_url")) as pg:
            yield Stored(PgScheduleStore(pg), PgRunCosts(pg), PgUsageLedger(pg))
        return
    database = await open_db(tmp_path / "thalos.db")
    try:
        yield Stored(ScheduleStore(database), SqliteRunCosts(database), SqliteUsageLedger(database))
    finally:
        await database.aclose()


@dataclass
class RecordingRunner:
    """Stands in for the subagent runner: records whom each run runs as."""

    callers: list[SecurityContext] = field(default_factory=list)

    async def run(
        self, agent_id: str, task: str, caller: SecurityContext, *, reply_to: Address | None
    ) -> RunResult:
        self.callers.append(caller)
        return RunResult(SessionId("s"), "done", TokenUsage(), (), 0.0)


def made_by_ana() -> NewSchedule:
    return NewSchedule(
        owner=SecurityContext.of("ana", ["admin"]),
        agent_id="helper",
        task="Tidy the files.",
        deliver_to=CHAT,
        at=datetime(2026, 6, 1, 9, 0, tzinfo=UTC),
    )


@asynccontextmanager
async def scheduler(
    db: Stored, clock: ManualClock, book: RoleBook
) -> AsyncIterator[tuple[RecordingRunner, RecordingDelivery]]:
    runner, delivery = RecordingRunner(), RecordingDelivery()
    running = Scheduler(
        db.schedules,
        runner,  # type: ignore[arg-type]
        delivery,
        clock=clock,
        roles=book.roles,
    )
    async with anyio.create_task_group() as group:
        group.start_soon(running.run)
        yield runner, delivery
        group.cancel_scope.cancel()


async def test_a_role_taken_away_is_not_held_at_the_scheduled_run(db: Stored) -> None:
    clock = ManualClock(datetime(2026, 6, 1, 8, 0, tzinfo=UTC))
    await db.schedules.create(made_by_ana(), clock())
    now = RoleBook(People([Person("ana", "Ana", roles=("reader",))]), [])
    clock.now = datetime(2026, 6, 1, 9, 1, tzinfo=UTC)
    async with scheduler(db, clock, now) as (runner, delivery):
        await delivery.wait_for(1)
    assert runner.callers == [SecurityContext.of("ana", ["reader"])]  # not "admin"
    assert delivery.sent[0].kind == "answer"


async def test_a_person_removed_has_their_schedule_paused_and_told(db: Stored) -> None:
    clock = ManualClock(datetime(2026, 6, 1, 8, 0, tzinfo=UTC))
    store = db.schedules
    made = await store.create(made_by_ana(), clock())
    gone = RoleBook(People(), [("owner", ["admin"])], ["telegram:4242"])
    clock.now = datetime(2026, 6, 1, 9, 1, tzinfo=UTC)
    async with scheduler(db, clock, gone) as (runner, delivery):
        await delivery.wait_for(1)
    assert runner.callers == []  # never run as someone who is no longer anyone
    [notice] = delivery.sent
    assert notice.kind == "notice"
    assert "paused" in notice.text
    assert "no longer in the configuration" in notice.text
    after = await store.get(made.id)
    assert after is not None
    assert after.last_result is not None
    assert after.last_result.startswith("skipped:")


async def test_a_run_projected_over_the_budget_is_skipped_and_said(db: Stored) -> None:
    """The schedule's recent runs took about 400 tokens; ana has 300 of her 1,000 left
    today: the run is not started, and its chat is told why. The next day it runs."""
    clock = ManualClock(datetime(2026, 6, 1, 8, 0, tzinfo=UTC))
    store, costs, ledger = db.schedules, db.costs, db.ledger
    made = await store.create(
        NewSchedule(
            SecurityContext.of("ana"),
            "helper",
            "Summarise the news.",
            CHAT,
            cron="0 9 * * *",
            timezone="UTC",
        ),
        clock(),
    )
    await costs.record(made.id, 380, clock() - timedelta(days=2))  # two earlier runs
    await costs.record(made.id, 400, clock() - timedelta(days=1))
    await ledger.add("ana", "2026-06-01", TokenUsage(700, 0), 0.0)
    limits = SpendingLimits(ledger, PriceTable({}), daily_tokens=1_000, clock=clock)
    runner, delivery = RecordingRunner(), RecordingDelivery()
    book = RoleBook(People([Person("ana", "Ana")]), [])
    scheduler = Scheduler(
        store,
        runner,  # type: ignore[arg-type]
        delivery,
        clock=clock,
        roles=book.roles,
        projection=Projection(limits, costs),
    )
    clock.now = datetime(2026, 6, 1, 9, 1, tzinfo=UTC)
    async with anyio.create_task_group() as group:
        group.start_soon(scheduler.run)
        await delivery.wait_for(1)
        assert runner.callers == []  # not started
        [said] = delivery.sent
        assert said.kind == "notice"
        assert "skipped: its runs take about 400 tokens and ana has 300" in said.text
        clock.now = datetime(2026, 6, 2, 9, 1, tzinfo=UTC)  # a new day: the budget resets
        scheduler.wake()
        await delivery.wait_for(2)
        group.cancel_scope.cancel()
    assert runner.callers == [SecurityContext.of("ana")]
    assert await costs.recent(made.id) == [0, 400, 380]  # this run's tokens kept too


async def test_a_schedules_own_limit_and_its_persons_month_skip_a_run(db: Stored) -> None:
    """``[[schedules]] daily_tokens``: the schedule took 900 of its 1,000 today and a run
    takes about 400: skipped, whatever its person has left. The person's monthly limit
    counts every day of the month."""
    clock = ManualClock(datetime(2026, 6, 10, 8, 0, tzinfo=UTC))
    costs, ledger = db.costs, db.ledger
    await costs.record("news", 500, datetime(2026, 6, 9, 23, 0, tzinfo=UTC))  # yesterday
    await costs.record("news", 400, clock())
    await costs.record("news", 500, clock())
    limits = SpendingLimits(ledger, PriceTable({}), clock=clock)
    projection = Projection(limits, costs, {"news": (1_000, None)})
    said = await projection.refusal("news", "ana")
    assert said == (
        "this schedule's runs took 900 tokens of its daily 1,000 ([[schedules]] "
        "daily_tokens), and a run takes about 500"
    )
    assert await Projection(limits, costs, {"news": (2_000, None)}).refusal("news", "ana") is None
    monthly = SpendingLimits(ledger, PriceTable({}), monthly_tokens=5_000, clock=clock)
    await ledger.add("ana", "2026-06-01", TokenUsage(4_700, 0), 0.0)
    over = await Projection(monthly, costs).refusal("news", "ana")
    assert over == "its runs take about 500 tokens and ana has 300 of this month's 5,000 left"


async def test_a_run_projected_past_a_cost_limit_is_skipped(db: Stored) -> None:
    """The schedule's runs cost about $0.40; ana spent $1.70 of her $2.00 today."""
    clock = ManualClock(datetime(2026, 6, 10, 8, 0, tzinfo=UTC))
    costs, ledger = db.costs, db.ledger
    await costs.record("news", 100, clock(), 0.4)
    await ledger.add("ana", "2026-06-10", TokenUsage(10, 0), 1.7)
    limits = SpendingLimits(ledger, PriceTable({}), daily_cost_usd=2.0, clock=clock)
    said = await Projection(limits, costs).refusal("news", "ana")
    assert said == "its runs cost about $0.40 and ana has $0.30 of today's $2.00 left"
    roomy = SpendingLimits(ledger, PriceTable({}), daily_cost_usd=3.0, clock=clock)
    assert await Projection(roomy, costs).refusal("news", "ana") is None
