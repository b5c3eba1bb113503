"""The ``schedule`` tools: scoped to the caller like memory, the current agent, the
conversation the turn came from; and the whole path through the pump: the model makes a
schedule, ``/status`` shows it, and its answer later arrives with no user message."""

from __future__ import annotations

from datetime import timedelta

import anyio
import pytest

from tests.pump.harness import CHANNEL, FakeSource, RecordingAdapter
from tests.schedules.conftest import ManualClock
from tests.subagents.conftest import ALICE, CATALOG
from thalos_bot.config.models import PumpSettings
from thalos_bot.domain.address import Address
from thalos_bot.domain.events import TurnCompleted
from thalos_bot.domain.ids import ChannelId, ConversationId, SessionId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.providers.scripted import CallTool, Say, ScriptedProvider
from thalos_bot.pump.pump import ChannelPump
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.schedules.scheduler import Scheduler
from thalos_bot.schedules.store import ScheduleStore
from thalos_bot.schedules.tools import ScheduleToolSource
from thalos_bot.service.delivery import AdapterDelivery
from thalos_bot.service.detached import pending_schedules
from thalos_bot.storage.database import Database
from thalos_bot.storage.memory_conversations import MemoryConversationMap
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.subagents.runner import SubagentRunner
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot.tools.types import ToolContext

pytestmark = pytest.mark.anyio

BOB = SecurityContext.of("bob")
HERE = Address(ChannelId("telegram"), ConversationId("4242"))


def context(caller: SecurityContext, reply_to: Address | None = HERE) -> ToolContext:
    return ToolContext(
        caller, CATALOG.get("researcher"), SessionId("s_1"), depth=0, reply_to=reply_to
    )


async def test_schedules_belong_to_their_caller(db: Database) -> None:
    clock = ManualClock()
    source = ScheduleToolSource(ScheduleStore(db), clock=clock)
    at = (clock.now + timedelta(hours=2)).isoformat()
    made = await source.call("create", {"task": "Stretch.", "at": at}, context(ALICE))
    assert made.outcome == "ok", made.content
    assert "in 2h" in made.content
    schedule_id = made.content.split()[1]
    [row] = await ScheduleStore(db).active()
    assert (row.owner, row.agent_id, row.deliver_to) == ("alice", "researcher", HERE)
    assert (await source.call("list", {}, context(BOB))).content == "You have no pending schedules."
    theirs = await source.call("cancel", {"id": schedule_id}, context(BOB))
    nothing = await source.call("cancel", {"id": "sch_nothing"}, context(BOB))
    assert theirs.content.replace(schedule_id, "X") == nothing.content.replace("sch_nothing", "X")
    assert schedule_id in (await source.call("list", {}, context(ALICE))).content
    assert (await source.call("cancel", {"id": schedule_id}, context(ALICE))).outcome == "ok"
    assert await ScheduleStore(db).active() == []


async def test_the_model_sees_a_paused_schedule_as_paused(db: Database) -> None:
    clock = ManualClock()
    store = ScheduleStore(db)
    source = ScheduleToolSource(store, clock=clock)
    made = await source.call("create", {"task": "Stretch.", "cron": "0 9 * * *"}, context(ALICE))
    schedule_id = made.content.split()[1]
    assert await store.pause(schedule_id)
    [line] = (await source.call("list", {}, context(ALICE))).content.splitlines()
    assert line.startswith(f"{schedule_id}: ")
    assert line.endswith(" (paused by the owner)")
    assert (await source.call("list", {}, context(BOB))).content == "You have no pending schedules."
    assert (await source.call("cancel", {"id": schedule_id}, context(ALICE))).outcome == "ok"
    assert (await source.call("list", {}, context(ALICE))).content == (
        "You have no pending schedules."
    )


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"task": "x"}, "exactly one of"),
        ({"task": "x", "at": "2026-06-01T09:00:00"}, "UTC offset"),
        ({"task": "x", "at": "2020-01-01T09:00:00+00:00"}, "already passed"),
        ({"task": "x", "cron": "0 9 * *"}, "5-field"),
        ({"task": "x", "cron": "0 9 * * *", "timezone": "Mars/Olympus"}, "IANA"),
        ({"task": "x", "cron": "0 9 * * *", "owner": "bob"}, "unexpected"),
    ],
)
async def test_a_bad_request_is_answered_saying_why(
    db: Database, arguments: dict[str, str], says: str
) -> None:
    source = ScheduleToolSource(ScheduleStore(db), clock=ManualClock())
    result = await source.call("create", arguments, context(ALICE))
    assert result.outcome == "error"
    assert says in result.content
    assert await ScheduleStore(db).active() == []


async def test_a_detached_run_cannot_schedule_without_a_conversation(db: Database) -> None:
    source = ScheduleToolSource(ScheduleStore(db), clock=ManualClock())
    result = await source.call(
        "create", {"task": "x", "cron": "0 9 * * *"}, context(ALICE, reply_to=None)
    )
    assert result.outcome == "refused"


async def test_a_schedule_made_in_a_chat_answers_there_later_unprompted(db: Database) -> None:
    clock = ManualClock()
    at = (clock.now + timedelta(hours=1)).isoformat()
    provider = ScriptedProvider(
        [
            [CallTool("schedule__create", {"task": "Say it is time to stretch.", "at": at})],
            [Say("I will remind you.")],
            [Say("Time to stretch!")],
        ],
        default=None,
    )
    store = ScheduleStore(db)
    tools = ScheduleToolSource(store, clock=clock)
    adapter, source = RecordingAdapter(), FakeSource()
    async with Runtime(
        catalog=CATALOG,
        store=SqliteSessionStore(db),
        provider=provider,
        settings=RuntimeSettings(model="m"),
        tools=SourceCatalog([tools]),
    ) as runtime:
        scheduler = Scheduler(
            store, SubagentRunner(runtime), AdapterDelivery({CHANNEL: adapter}), clock=clock
        )
        tools.on_change = scheduler.wake
        pump = ChannelPump(
            runtime=runtime,
            catalog=CATALOG,
            conversations=MemoryConversationMap(),
            adapters={CHANNEL: adapter},
            settings=PumpSettings(flush_interval=0.05),
            clock=clock,
            pending_schedules=pending_schedules(store, clock),
        )
        async with anyio.create_task_group() as group:
            group.start_soon(scheduler.run)
            group.start_soon(pump.run, [source])
            await source.send("Remind me to stretch in an hour.").wait()
            await source.send("/status").wait()
            assert adapter.final_texts() == ["I will remind you."]
            status = adapter.notices()[-1]
            assert "Scheduled: 1 pending schedule; next sch_" in status
            assert "(in 1h)" in status
            clock.advance(hours=1, seconds=1)
            scheduler.wake()
            await adapter.wait_for(lambda: len(adapter.final_texts()) == 2, timeout=10)
            source.close()
            group.cancel_scope.cancel()
    assert adapter.final_texts() == ["I will remind you.", "Time to stretch!"]
    scheduled = provider.requests[2]
    assert [(m.role, m.text) for m in scheduled.messages] == [
        ("user", "Say it is time to stretch.")
    ]
    assert isinstance(adapter.of()[-1], TurnCompleted)
    assert await store.active() == []
