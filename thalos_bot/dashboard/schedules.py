"""The schedules section's read model and the owner's three actions on a schedule."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from thalos_bot.dashboard.deps import ScheduleBoard
from thalos_bot.domain.schedule import Schedule, State

Action = Literal["pause", "resume", "cancel"]
Outcome = Literal["done", "refused"]


@dataclass(frozen=True, slots=True)
class ScheduleRow:
    id: str
    owner: str
    agent: str
    task: str
    timing: str
    deliver_to: str
    state: State
    next_run: datetime | None
    last_started: datetime | None
    last_result: str | None
    last_finished: datetime | None
    runs: int

    @property
    def actions(self) -> tuple[Action, ...]:
        """What the owner may do with it now."""
        if self.state == "active":
            return ("pause", "cancel")
        if self.state == "paused":
            return ("resume", "cancel")
        return ()


def row_of(schedule: Schedule) -> ScheduleRow:
    return ScheduleRow(
        id=schedule.id,
        owner=schedule.owner,
        agent=schedule.agent_id,
        task=schedule.task,
        timing=schedule.timing,
        deliver_to=str(schedule.deliver_to),
        state=schedule.state,
        next_run=schedule.next_run,
        last_started=schedule.last_started,
        last_result=schedule.last_result,
        last_finished=schedule.last_finished,
        runs=schedule.runs,
    )


async def schedule_rows(board: ScheduleBoard) -> list[ScheduleRow]:
    """Active soonest first, then paused, then done (cancelled ones are left out)."""
    return [row_of(schedule) for schedule in await board.listing()]


async def apply(board: ScheduleBoard, action: Action, schedule_id: str, now: datetime) -> Outcome:
    """Pause, resume or cancel; ``refused`` when the schedule is not in a state that
    allows it (already paused, finished, cancelled, or unknown)."""
    if action == "pause":
        changed = await board.pause(schedule_id)
    elif action == "resume":
        changed = await board.resume(schedule_id, now)
    else:
        changed = await board.cancel(schedule_id)
    return "done" if changed else "refused"
