"""Whether a scheduled run may start within its person's budget: its cost projected
from the schedule's recent runs (their tokens, the most of the last few, so one cheap
run does not hide the usual), added to what the person spent today. A run that would
cross the daily token limit is skipped and reported, never started; a schedule with no
run yet is let through (nothing to project from)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from thalos_bot.runtime.limits import SpendingLimits


class RunCosts(Protocol):
    async def record(self, schedule_id: str, tokens: int, at: datetime) -> None: ...

    async def recent(self, schedule_id: str, count: int = ...) -> list[int]: ...


@dataclass(frozen=True, slots=True)
class Projection:
    limits: SpendingLimits
    costs: RunCosts

    async def refusal(self, schedule_id: str, principal: str) -> str | None:
        """Why the run may not start (None: it may)."""
        tokens, _ = self.limits.daily(principal)
        if tokens is None:
            return None
        recent = await self.costs.recent(schedule_id)
        if not recent:
            return None
        projected = max(recent)
        day = await self.limits.ledger.day(principal, self.limits.today())
        if day.usage.total + projected < tokens:
            return None
        return (
            f"its runs take about {projected:,} tokens and {principal} has "
            f"{max(0, tokens - day.usage.total):,} of today's {tokens:,} left"
        )
