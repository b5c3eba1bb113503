"""The scheduler: runs each due schedule once, as a subagent run, and delivers.

It sleeps until the soonest ``next_run`` or until :meth:`Scheduler.wake` (a schedule
was created or cancelled), whichever comes first: no polling. On start-up every
schedule that came due while the daemon was down is claimed and run once. Runs go in
the scheduler's task group, so a slow job never holds up the next one.

A schedule answers in the chat it was made in, which the channel may no longer serve
(the person was removed from its allowlist). The channel's allowlist is asked at start
(each such schedule is logged) and again before every run: a run whose chat is not
allowed is skipped (claimed, not run, logged), and the schedule stays, to run again if
the chat is allowed again.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import datetime

import anyio
import structlog
from anyio.abc import TaskGroup

from thalos_bot.channels.ports import DeliveryAllowlist
from thalos_bot.domain.clock import utc_now
from thalos_bot.domain.schedule import Schedule
from thalos_bot.domain.security import SecurityContext
from thalos_bot.schedules.delivery import Deliver, DeliveryKind
from thalos_bot.schedules.projection import Projection
from thalos_bot.schedules.store import ScheduleStorage
from thalos_bot.subagents.outcome import RunError, RunFailure, RunResult
from thalos_bot.subagents.runner import SubagentRunner

log = structlog.get_logger(__name__)

MAX_SLEEP = 3600.0
LEFT_TO_ANOTHER = 1.0
"""Seconds before looking again at a schedule still due once this process claimed what
it could: another replica claims it (on PostgreSQL, one answering in a conversation only
the connection's holder can send to is left to that holder)."""
"""Longest single wait: the wall clock may jump (a suspended laptop), so look again."""
RETRY_AFTER = 30.0
"""Wait after the schedules table could not be read, before trying again."""


FAILURES = {
    RunFailure.AGENT_NOT_FOUND: "its agent no longer exists",
    RunFailure.BUDGET_EXCEEDED: "it used more tokens than a run may",
    RunFailure.DEADLINE_EXCEEDED: "it ran out of time",
    RunFailure.DEPTH_EXCEEDED: "it was nested too deep",
    RunFailure.TURN_FAILED: "the model could not answer",
}


def failure_notice(schedule: Schedule, error: RunError) -> str:
    what = FAILURES[error.code]
    text = f"The scheduled task {schedule.id} did not finish: {what}."
    if error.partial_text.strip():
        text += f"\n\nWhat it had so far:\n{error.partial_text.strip()}"
    return text


ORPHANED = "the person it runs as is no longer in the configuration"


class Scheduler:
    def __init__(
        self,
        store: ScheduleStorage,
        runner: SubagentRunner,
        delivery: Deliver,
        *,
        clock: Callable[[], datetime] = utc_now,
        channels: Collection[str] | None = None,
        allowlist: DeliveryAllowlist | None = None,
        roles: Callable[[str], frozenset[str] | None] | None = None,
        projection: Projection | None = None,
    ) -> None:
        """``channels``: only schedules that answer in these run here (a ``thalos-bot
        chat`` leaves the Telegram ones to the daemon); None: all of them.
        ``allowlist``: whether a schedule's chat may still be written to (None: all
        may). ``roles``: a principal's roles now (None: no longer anyone); a run runs
        with them, not with those the schedule was made with (None: the made ones)."""
        self.allowlist = allowlist
        self.roles = roles
        self.projection = projection
        """Skips a run projected to cross its person's daily budget (None: never)."""
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
        await self.report_not_allowed()
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
        seconds = (due - self.clock()).total_seconds()
        if seconds <= 0:  # still due once claimed: another replica's (see ScheduleStorage)
            return LEFT_TO_ANOTHER
        return min(MAX_SLEEP, seconds)

    async def report_not_allowed(self) -> list[Schedule]:
        """Log every active schedule whose chat may no longer be written to (its runs
        will be skipped); those schedules."""
        try:
            active = await self.store.active()
        except Exception:
            log.exception("schedules_unavailable")
            return []
        refused: list[Schedule] = []
        for schedule in active:
            if self.channels is not None and schedule.deliver_to.channel_id not in self.channels:
                continue
            reason = self.refusal(schedule)
            if reason is not None:
                refused.append(schedule)
                log.warning(
                    "schedule_chat_not_allowed",
                    schedule=schedule.id,
                    deliver_to=str(schedule.deliver_to),
                    reason=reason,
                    note="its runs are skipped until the chat is allowed again",
                )
        return refused

    def refusal(self, schedule: Schedule) -> str | None:
        """Why ``schedule``'s chat may not be written to now; None when it may."""
        return None if self.allowlist is None else self.allowlist.refusal(schedule.deliver_to)

    async def start_due(self, runs: TaskGroup) -> list[Schedule]:
        """Claim every schedule due now and start its run in ``runs``, except those whose
        chat is no longer allowed (claimed, logged, skipped); the ones started."""
        claimed = await self.store.claim_due(self.clock(), self.channels)
        started: list[Schedule] = []
        for schedule in claimed:
            reason = self.refusal(schedule)
            if reason is not None:
                log.warning(
                    "schedule_skipped",
                    schedule=schedule.id,
                    deliver_to=str(schedule.deliver_to),
                    reason=reason,
                )
                await self._finished(schedule, f"skipped: {reason}")
                continue
            runs.start_soon(self._run_one, schedule, name=f"schedule-{schedule.id}")
            started.append(schedule)
        return started

    async def _run_one(self, schedule: Schedule) -> None:
        log.info(
            "schedule_run", schedule=schedule.id, agent=schedule.agent_id, run=schedule.runs + 1
        )
        address = schedule.deliver_to
        kind: DeliveryKind
        caller = schedule.caller
        if self.roles is not None:
            now = self.roles(schedule.owner)
            if now is None:
                await self._orphaned(schedule)
                return
            caller = SecurityContext.of(schedule.owner, now)
        if self.projection is not None:
            over = await self.projection.refusal(schedule.id, schedule.owner)
            if over is not None:
                await self._over_budget(schedule, over)
                return
        try:
            outcome = await self.runner.run(
                schedule.agent_id, schedule.task, caller, reply_to=schedule.deliver_to
            )
            if self.projection is not None:
                spent = outcome.usage.total
                session = outcome.session_id if isinstance(outcome, RunResult) else None
                dollars = await self.projection.run_cost(session)
                await self.projection.costs.record(schedule.id, spent, self.clock(), dollars)
            if isinstance(outcome, RunError):
                text, kind = failure_notice(schedule, outcome), "notice"
                result = f"failed: {FAILURES[outcome.code]}"
            else:
                text, kind = (
                    outcome.text or "(The scheduled task finished without an answer.)",
                    "answer",
                )
                result = "ok"
            await self._finished(schedule, result)  # kept first: delivery may take long
            await self.delivery.deliver(
                address.channel_id, address.conversation_id, text, kind=kind
            )
        except Exception:
            log.exception("schedule_run_failed", schedule=schedule.id)
            await self._finished(schedule, "failed: something went wrong")

    async def _over_budget(self, schedule: Schedule, why: str) -> None:
        """Not started: it would cross its person's budget. Said in its chat."""
        log.warning("schedule_over_budget", schedule=schedule.id, owner=schedule.owner)
        try:
            await self._finished(schedule, "skipped: over budget")
            address = schedule.deliver_to
            text = f"The scheduled task {schedule.id} was skipped: {why}."
            await self.delivery.deliver(
                address.channel_id, address.conversation_id, text, kind="notice"
            )
        except Exception:
            log.exception("schedule_skip_unsaid", schedule=schedule.id)

    async def _orphaned(self, schedule: Schedule) -> None:
        """Its owner is no longer a person of this bot: paused, and said so in its chat."""
        log.warning("schedule_owner_gone", schedule=schedule.id, owner=schedule.owner)
        try:
            await self._finished(schedule, f"skipped: {ORPHANED}")
            await self.store.pause(schedule.id)
            text = f"The scheduled task {schedule.id} is paused: {ORPHANED}."
            address = schedule.deliver_to
            await self.delivery.deliver(
                address.channel_id, address.conversation_id, text, kind="notice"
            )
        except Exception:
            log.exception("schedule_pause_failed", schedule=schedule.id)

    async def _finished(self, schedule: Schedule, result: str) -> None:
        """Keep how the run ended; a store that cannot take it is logged, never fatal."""
        try:
            await self.store.finish(schedule.id, result, self.clock())
        except Exception:
            log.exception("schedule_result_unsaved", schedule=schedule.id)
