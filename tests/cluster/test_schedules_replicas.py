"""100 schedules due at the same moment, three replicas' schedulers on one PostgreSQL
(each with its own pool, runtime and scripted model): each schedule runs exactly once.
Counted three ways: the model requests, the deliveries, and each row's ``runs``."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import anyio
import pytest

from tests.schedules.conftest import ManualClock, RecordingDelivery
from tests.subagents.conftest import ALICE, CATALOG
from thalos_bot.domain.address import Address
from thalos_bot.providers.scripted import ScriptedProvider
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.schedules.scheduler import Scheduler
from thalos_bot.schedules.store import NewSchedule
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.pg.schedules import PgScheduleStore
from thalos_bot.subagents.runner import SubagentRunner

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]
REPLICAS = 3
SCHEDULES = 100
CHAT = Address.parse("telegram:4242")


def task(i: int) -> str:
    return f"Job {i:03d}."


async def test_a_hundred_schedules_due_at_once_each_run_once_across_replicas(
    postgres_url: str,
) -> None:
    before = ManualClock(datetime(2026, 6, 1, 8, 0, tzinfo=UTC))
    async with await PgDatabase.open(postgres_url) as db:
        store = PgScheduleStore(db)
        made = [
            await store.create(
                NewSchedule(ALICE, "researcher", task(i), CHAT, cron="0 9 * * *"), before()
            )
            for i in range(SCHEDULES)
        ]
    due = ManualClock(datetime(2026, 6, 1, 9, 0, tzinfo=UTC))  # every one is due now
    delivery = RecordingDelivery()
    providers = [ScriptedProvider() for _ in range(REPLICAS)]

    async def replica(provider: ScriptedProvider, ready: anyio.Event) -> None:
        async with (
            await PgDatabase.open(postgres_url, pool_size=2) as own,
            Runtime(
                catalog=CATALOG,
                store=MemorySessionStore(),
                provider=provider,
                settings=RuntimeSettings(model="m"),
            ) as runtime,
        ):
            scheduler = Scheduler(
                PgScheduleStore(own), SubagentRunner(runtime), delivery, clock=due
            )
            ready.set()
            await go.wait()  # all three claim at the same moment
            await scheduler.run()

    go = anyio.Event()
    async with anyio.create_task_group() as group:
        readies = [anyio.Event() for _ in range(REPLICAS)]
        for provider, ready in zip(providers, readies, strict=True):
            group.start_soon(replica, provider, ready)
        for ready in readies:
            await ready.wait()
        go.set()
        await delivery.wait_for(SCHEDULES, timeout=90)
        group.cancel_scope.cancel()

    async with await PgDatabase.open(postgres_url) as db:
        rows = [await PgScheduleStore(db).get(s.id) for s in made]
    assert [r.runs if r is not None else None for r in rows] == [1] * SCHEDULES
    assert sum(len(p.requests) for p in providers) == SCHEDULES, "one model request a run"
    shown = Counter(d.text for d in delivery.sent)
    assert shown == Counter({f"You said: {task(i)}": 1 for i in range(SCHEDULES)})
