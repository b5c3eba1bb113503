"""Whether a scheduled run may start within its budgets: its cost projected from the
schedule's recent runs (their tokens, the most of the last few, so one cheap run does
not hide the usual), added to what the schedule itself spent today and this month (its
own ``[[schedules]]`` limits), and to what its person spent today and this month (their
daily and monthly token limits). A run that would cross one is skipped and reported,
never started; a schedule with no run yet is let through its person's limits (nothing to
project from)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Protocol
from zoneinfo import ZoneInfo

from thalos_bot.runtime.limits import SpendingLimits


class RunCosts(Protocol):
    async def record(
        self, schedule_id: str, tokens: int, at: datetime, cost_usd: float = ...
    ) -> None: ...

    async def recent(self, schedule_id: str, count: int = ...) -> list[int]: ...

    async def recent_costs(self, schedule_id: str, count: int = ...) -> list[float]: ...

    async def spent_since(self, schedule_id: str, since: datetime) -> int: ...


@dataclass(frozen=True, slots=True)
class Projection:
    limits: SpendingLimits
    costs: RunCosts
    caps: Mapping[str, tuple[int | None, int | None]] = field(default_factory=dict)
    """Schedules with token limits of their own (``[[schedules]]``): (daily, monthly)."""

    async def refusal(self, schedule_id: str, principal: str) -> str | None:
        """Why the run may not start (None: it may)."""
        recent = await self.costs.recent(schedule_id)
        projected = max(recent, default=0)
        own = await self._own_cap(schedule_id, projected)
        if own is not None or not recent:
            return own
        for period, (tokens, _) in (
            ("day", self.limits.daily(principal)),
            ("month", self.limits.monthly(principal)),
        ):
            if tokens is None:
                continue
            used = (await self.limits.used(principal, period)).usage.total  # type: ignore[arg-type]
            if used + projected >= tokens:
                whose = "today's" if period == "day" else "this month's"
                return (
                    f"its runs take about {projected:,} tokens and {principal} has "
                    f"{max(0, tokens - used):,} of {whose} {tokens:,} left"
                )
        return await self._over_dollars(schedule_id, principal)

    async def _over_dollars(self, schedule_id: str, principal: str) -> str | None:
        """The person's daily or monthly cost limit a run's projected dollars cross."""
        dollars = max(await self.costs.recent_costs(schedule_id), default=0.0)
        if dollars <= 0:
            return None
        for period, (_, cap) in (
            ("day", self.limits.daily(principal)),
            ("month", self.limits.monthly(principal)),
        ):
            if cap is None:
                continue
            spent = (await self.limits.used(principal, period)).cost_usd  # type: ignore[arg-type]
            if spent + dollars >= cap:
                whose = "today's" if period == "day" else "this month's"
                return (
                    f"its runs cost about ${dollars:,.2f} and {principal} has "
                    f"${max(0.0, cap - spent):,.2f} of {whose} ${cap:,.2f} left"
                )
        return None

    async def run_cost(self, session_id: str | None) -> float:
        """A finished run's estimated dollars: its session's tokens by model, priced."""
        if not session_id:
            return 0.0
        models = await self.limits.ledger.session_models(session_id)
        return self.limits.prices.known_cost(models)

    async def _own_cap(self, schedule_id: str, projected: int) -> str | None:
        """The schedule's own daily or monthly limit a run would cross, in words."""
        daily, monthly = self.caps.get(schedule_id, (None, None))
        today = date.fromisoformat(self.limits.today())
        zone = ZoneInfo(self.limits.timezone)
        for cap, first, what in (
            (daily, today, "daily"),
            (monthly, today.replace(day=1), "monthly"),
        ):
            if cap is None:
                continue
            since = datetime.combine(first, time(), zone)
            used = await self.costs.spent_since(schedule_id, since)
            if used + projected >= cap:
                return (
                    f"this schedule's runs took {used:,} tokens of its {what} {cap:,} "
                    f"([[schedules]] {what}_tokens), and a run takes about {projected:,}"
                )
        return None
