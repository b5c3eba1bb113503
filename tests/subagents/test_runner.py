"""The subagent runner's contract: a buffered result or a typed failure, a fresh session
closed on every path (the caller's cancellation too), deadline against budget, depth."""

from __future__ import annotations

import anyio
import pytest
from structlog.testing import capture_logs

from tests.subagents.conftest import ALICE, CATALOG, World
from thalos_bot.domain.errors import ErrorCode
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.providers.scripted import Await, CallTool, Fail, Hang, Say
from thalos_bot.runtime.runtime import Runtime
from thalos_bot.subagents.outcome import RunError, RunFailure, RunResult
from thalos_bot.subagents.runner import Budget, SubagentRunner

pytestmark = pytest.mark.anyio


async def assert_all_closed(world: World) -> None:
    records = await world.store.records()
    assert records, "the run made a session"
    assert all(r.status == "closed" for r in records)
    assert not any(world.runtime.is_busy(r.id) for r in records)


async def test_a_run_answers_with_its_text_usage_and_tools_and_closes_its_session(
    world: World,
) -> None:
    world.provider.push([CallTool("calc__add", {"a": 1})], [Say("It is ", "3.")])
    outcome = await world.runner.run("researcher", "What is 1+2?", ALICE)
    assert isinstance(outcome, RunResult)
    assert outcome.text == "It is 3."
    assert [c.name for c in outcome.tool_calls] == ["calc__add"]
    assert outcome.usage.input_tokens > 0
    assert outcome.usage.output_tokens > 0
    assert not outcome.arrived_late
    # One fresh session, owned by the caller, the task its only user message.
    [record] = await world.store.records()
    assert record.owner == "alice"
    assert record.agent_id == "researcher"
    first = world.provider.requests[0]
    assert [(m.role, m.text) for m in first.messages] == [("user", "What is 1+2?")]
    assert first.system[0].text == "You research."
    await assert_all_closed(world)


async def test_an_unknown_agent_is_a_typed_failure_and_opens_nothing(world: World) -> None:
    outcome = await world.runner.run("nobody", "hi", ALICE)
    assert isinstance(outcome, RunError)
    assert outcome.code is RunFailure.AGENT_NOT_FOUND
    assert world.store.created == []
    assert world.provider.requests == []


async def test_too_deep_is_refused_before_any_session(world: World) -> None:
    runner = SubagentRunner(world.runtime, max_depth=2)
    world.provider.push([Say("ok")])
    ok = await runner.run("researcher", "fine", ALICE, depth=2)
    assert isinstance(ok, RunResult)
    outcome = await runner.run("researcher", "too deep", ALICE, depth=3)
    assert isinstance(outcome, RunError)
    assert outcome.code is RunFailure.DEPTH_EXCEEDED
    assert len(world.store.created) == 1  # only the run at depth 2


async def test_spending_past_the_token_budget_fails_after_the_turn(world: World) -> None:
    world.provider.push([Say("A long ", "answer that costs a lot.")])
    outcome = await world.runner.run(
        "researcher", "Tell me everything.", ALICE, budget=Budget(max_total_tokens=3)
    )
    assert isinstance(outcome, RunError)
    assert outcome.code is RunFailure.BUDGET_EXCEEDED
    assert outcome.partial_text == "A long answer that costs a lot."
    assert outcome.usage.total > 3
    await assert_all_closed(world)


async def test_the_deadline_cancels_the_turn_in_flight(world: World) -> None:
    world.provider.push([Say("Thinking"), Hang()])
    outcome = await world.runner.run(
        "researcher", "Take forever.", ALICE, budget=Budget(deadline=0.2)
    )
    assert isinstance(outcome, RunError)
    assert outcome.code is RunFailure.DEADLINE_EXCEEDED
    assert outcome.partial_text == "Thinking"
    await assert_all_closed(world)


async def test_the_deadline_wins_over_a_large_budget_and_the_budget_over_a_long_deadline(
    world: World,
) -> None:
    world.provider.push([Hang()], [Say("expensive words here")])
    late = await world.runner.run(
        "researcher", "x", ALICE, budget=Budget(max_total_tokens=10**6, deadline=0.1)
    )
    spent = await world.runner.run(
        "researcher", "y", ALICE, budget=Budget(max_total_tokens=2, deadline=3600)
    )
    assert isinstance(late, RunError)
    assert late.code is RunFailure.DEADLINE_EXCEEDED
    assert isinstance(spent, RunError)
    assert spent.code is RunFailure.BUDGET_EXCEEDED


class IgnoresCancel(Runtime):
    """A runtime whose cancel arrives too late: the turn finishes anyway."""

    cancel_asked: anyio.Event

    async def cancel(self, session_id: SessionId, caller: SecurityContext) -> bool:
        self.cancel_asked.set()
        return False


async def test_a_turn_that_beats_the_deadlines_cancel_is_a_success_logged_late(
    world: World,
) -> None:
    async with IgnoresCancel(
        catalog=CATALOG, store=world.store, provider=world.provider, settings=world.runtime.settings
    ) as late_runtime:
        late_runtime.cancel_asked = anyio.Event()
        runner = SubagentRunner(late_runtime)
        world.provider.push([Await(late_runtime.cancel_asked.wait), Say("Made it.")])
        with capture_logs() as logs:
            outcome = await runner.run("researcher", "Hurry.", ALICE, budget=Budget(deadline=0.05))
    assert isinstance(outcome, RunResult)
    assert outcome.text == "Made it."
    assert outcome.arrived_late
    assert any(e["event"] == "subagent_arrived_late" for e in logs)
    [record] = await world.store.records()
    assert record.status == "closed"


async def test_a_failed_turn_is_a_typed_failure_and_its_session_is_closed(world: World) -> None:
    world.provider.push([Say("half"), Fail("boom")])
    outcome = await world.runner.run("researcher", "Try.", ALICE)
    assert isinstance(outcome, RunError)
    assert outcome.code is RunFailure.TURN_FAILED
    assert outcome.cause is ErrorCode.PROVIDER_ERROR
    assert outcome.partial_text == "half"
    assert "boom" not in outcome.detail
    await assert_all_closed(world)


async def test_the_callers_cancellation_still_closes_the_session(world: World) -> None:
    started = anyio.Event()

    async def mark() -> None:
        started.set()

    world.provider.push([Say("working"), Await(mark), Hang()])
    finished: list[object] = []
    async with anyio.create_task_group() as group:

        async def call() -> None:
            finished.append(await world.runner.run("researcher", "Long job.", ALICE))

        group.start_soon(call)
        await started.wait()
        group.cancel_scope.cancel()
    assert finished == [], "the cancellation propagated to the caller"
    await assert_all_closed(world)


async def test_an_anonymous_caller_gets_no_session(world: World) -> None:
    outcome = await world.runner.run("researcher", "hi", SecurityContext.of(""))
    assert isinstance(outcome, RunError)
    assert outcome.code is RunFailure.TURN_FAILED
    assert outcome.cause is ErrorCode.INVALID_REQUEST
    assert world.store.created == []
