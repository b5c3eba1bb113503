"""The scheduler: runs each due schedule once, as a subagent run, and delivers.

It sleeps until the soonest ``next_run`` or until :meth:`Scheduler.wake` (a schedule
was created or cancelled), whichever comes first: no polling. On start-up every
schedule that came due while the daemon was down is claimed and run once. Runs go in
the scheduler's task group, so a slow job never holds up the next one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import datetime

import anyio
import structlog
from anyio.abc import TaskGroup

from thalos_bot.domain.clock import utc_now
from thalos_bot.schedules.store import Schedule, ScheduleStore
from thalos_bot.service.delivery import Deliver, DeliveryKind
from thalos_bot.subagents.outcome import RunError, RunFailure
from thalos_bot.subagents.runner import SubagentRunner

log = structlog.get_logger(__name__)

MAX_SLEEP = 3600.0
"""Longest single wait: the wall clock may jump (a suspended laptop), so look again."""
RETRY_AFTER = 30.0
"""Wait after the schedules table could not be read, before trying again."""


def failure_notice(schedule: Schedule, error: RunError) -> str:
    what = {
        RunFailure.AGENT_NOT_FOUND: "its agent no longer exists",
        RunFailure.BUDGET_EXCEEDED: "it used more tokens than a run may",
        RunFailure.DEADLINE_EXCEEDED: "it ran out of time",
        RunFailure.DEPTH_EXCEEDED: "it was nested too deep",
        RunFailure.TURN_FAILED: "the model could not answer",
    }[error.code]
    text = f"The scheduled task {schedule.id} did not finish: {what}."
    if error.partial_text.strip():
        text += f"\n\nWhat it had so far:\n{error.partial_text.strip()}"
    return text


class Scheduler:
    def __init__(
        self,
        store: ScheduleStore,
        runner: SubagentRunner,
        delivery: Deliver,
        *,
        clock: Callable[[], datetime] = utc_now,
        channels: Collection[str] | None = None,
    ) -> None:
        """``channels``: only schedules that answer in these run here (a ``thalos-bot
        chat`` leaves the Telegram ones to the daemon); None: all of them."""
        self.channels = None if channels is None else frozenset(channels)
        self.store = store
        self.runner = runner
        self.delivery = delivery
        self.clock = clock
        self._wake = anyio.Event()

    def wake(self) -> None:
        """Look at the schedules again now (one was created or cancelled)."""
        self._wake.set()

    async def run(self) -> None:
        """Serve schedules until cancelled."""
        async with anyio.create_task_group() as runs:
            while True:
                self._wake = anyio.Event()
                wait = await self._step(runs)
                with anyio.move_on_after(wait):
                    await self._wake.wait()

    async def _step(self, runs: TaskGroup) -> float:
        """Start what is due; the seconds until the next due time (or a retry)."""
        try:
            await self.start_due(runs)
            due = await self.store.next_due(self.channels)
        except Exception:
            log.exception("schedules_unavailable")
            return RETRY_AFTER
        if due is None:
            return MAX_SLEEP
        return min(MAX_SLEEP, max(0.0, (due - self.clock()).total_seconds()))

    async def start_due(self, runs: TaskGroup) -> list[Schedule]:
        """Claim every schedule due now and start its run in ``runs``."""
        claimed = await self.store.claim_due(self.clock(), self.channels)
        for schedule in claimed:
            runs.start_soon(self._run_one, schedule, name=f"schedule-{schedule.id}")
        return claimed

    async def _run_one(self, schedule: Schedule) -> None:
        log.info(
            "schedule_run", schedule=schedule.id, agent=schedule.agent_id, run=schedule.runs + 1
        )
        address = schedule.deliver_to
        kind: DeliveryKind
        try:
            outcome = await self.runner.run(
                schedule.agent_id, schedule.task, schedule.caller, reply_to=schedule.deliver_to
            )
            if isinstance(outcome, RunError):
                text, kind = failure_notice(schedule, outcome), "notice"
            else:
                text, kind = (
                    outcome.text or "(The scheduled task finished without an answer.)",
                    "answer",
                )
            await self.delivery.deliver(
                address.channel_id, address.conversation_id, text, kind=kind
            )
        except Exception:
            log.exception("schedule_run_failed", schedule=schedule.id)
