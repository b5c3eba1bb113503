"""Spending limits: what a session and a principal's day may spend, checked by the runtime.

A turn is refused before the model is called when its session or its principal's day is
already at a limit. After each model round the same limits are checked against what the
turn has spent so far; once one is reached the turn stops there (its pending tool calls
are not run, and the model gets no further round), keeping the text written so far.
Usage is added to the principal's day in the ledger when the turn ends, on every path:
in the same transaction as the turn when the turn is stored (see :meth:`SpendingLimits.spend`),
on its own when nothing of the turn is. Each model call's tokens are priced as the model
that answered it (a fallback member's at its own price, see
:class:`~thalos_bot.domain.pricing.ModelUsages`); a model with no price counts nothing
toward the day's cost, and makes a session's cost in /status "unknown".

A day is the principal's calendar day in the configured time zone (UTC by default); a
daily limit resets at the next midnight there, a monthly one on the first of the next
month. Each limit is a person's own (``[[people]]``) or ``[limits]``'.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

import structlog

from thalos_bot.domain.clock import utc_now
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.people import Budget
from thalos_bot.domain.pricing import ModelUsages, PriceTable
from thalos_bot.storage.protocol import Spend
from thalos_bot.storage.usage import LIFTED, DayUsage, UsageLedger, add_days

log = structlog.get_logger(__name__)

LIMIT_REACHED = "limit-reached"
BUDGET_ALERT = "budget-alert"
ALERT_LEVELS = (50, 80)
"""Percentages of a daily or monthly limit at which a person is told, once each in the
period (at 100 % the limit itself refuses the turn, saying when it resets)."""
EXHAUSTED = 100
"""The level recorded when a person first reaches a limit in its period (the admins are
told then, once)."""

Period = Literal["day", "month"]
Exhausted = Callable[[str, "LimitHit"], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class LimitHit:
    limit: str
    """The config key: ``session_tokens``, ``daily_tokens``, ``daily_cost_usd``,
    ``monthly_tokens`` or ``monthly_cost_usd``."""
    notice: str
    """What the user reads: which limit, and when it resets."""
    period: str = ""
    """The day (``2026-12-05``) or month (``2026-12``) the limit is for ("" for a
    session's)."""
    agent: str = ""
    """An agent's own limit (over everyone) that was reached; "" for the person's."""


Unit = Literal["tokens", "cost_usd"]
LIMIT_NAMES: tuple[tuple[Period, Unit, str], ...] = (
    ("day", "tokens", "daily_tokens"),
    ("day", "cost_usd", "daily_cost_usd"),
    ("month", "tokens", "monthly_tokens"),
    ("month", "cost_usd", "monthly_cost_usd"),
)
"""Each period's limits, by their config key (a :class:`Budget`'s fields)."""


@dataclass(frozen=True, slots=True)
class Cap:
    """One limit that applies to a principal."""

    period: Period
    unit: Unit
    value: float
    name: str
    """The config key: ``daily_tokens``, ``monthly_cost_usd``, ..."""
    key: str
    """Where it is set: ``limits.daily_tokens``, ``people.monthly_cost_usd``, ..."""


@dataclass(frozen=True, slots=True)
class Spending:
    """Tokens and estimated cost for a session and for the principal's day."""

    session: TokenUsage
    session_cost: float | None
    today: DayUsage
    timezone: str
    daily_tokens: int | None = None
    """The principal's daily limits (their own, or ``[limits]``'), for ``/status``."""
    daily_cost_usd: float | None = None
    month: DayUsage | None = None
    """This month's spending, when a monthly limit applies."""
    monthly_tokens: int | None = None
    monthly_cost_usd: float | None = None


@dataclass(slots=True)
class SpendingLimits:
    ledger: UsageLedger
    prices: PriceTable
    session_tokens: int | None = None
    daily_tokens: int | None = None
    daily_cost_usd: float | None = None
    monthly_tokens: int | None = None
    monthly_cost_usd: float | None = None
    timezone: str = "UTC"
    clock: Callable[[], datetime] = utc_now
    budgets: Mapping[str, Budget] = field(default_factory=dict)
    """People whose limits are their own (``[[people]]``); a limit they leave unset is
    ``[limits]``'."""
    agents: Mapping[str, Budget] = field(default_factory=dict)
    """Agents with limits of their own, over everyone who talks to them (``[[agents]]``)."""
    exhausted: Exhausted | None = None
    """Told once per period when a principal first reaches one of their limits (the
    host tells the admins)."""
    _zone: ZoneInfo = field(init=False)

    def __post_init__(self) -> None:
        self._zone = ZoneInfo(self.timezone)

    def today(self) -> str:
        return self.clock().astimezone(self._zone).date().isoformat()

    def this_month(self) -> str:
        return self.today()[:7]

    def resets_in(self, period: Period = "day") -> timedelta:
        now = self.clock().astimezone(self._zone)
        return datetime.combine(_next(now.date(), period), datetime.min.time(), self._zone) - now

    def daily(self, principal: str) -> tuple[int | None, float | None]:
        """The principal's daily token and cost limits."""
        return self._own(principal, "daily_tokens"), self._own(principal, "daily_cost_usd")

    def monthly(self, principal: str) -> tuple[int | None, float | None]:
        """The principal's monthly token and cost limits."""
        return self._own(principal, "monthly_tokens"), self._own(principal, "monthly_cost_usd")

    def caps(self, principal: str) -> list[Cap]:
        """Every daily and monthly limit that applies to the principal."""
        return [
            Cap(period, unit, value, name, self._key(principal, name))
            for period, unit, name in LIMIT_NAMES
            if (value := self._own(principal, name)) is not None
        ]

    def period_key(self, period: Period) -> str:
        return self.today() if period == "day" else self.this_month()

    async def used(self, principal: str, period: Period) -> DayUsage:
        """What the principal spent today, or this month so far."""
        today = self.today()
        if period == "day":
            return await self.ledger.day(principal, today)
        spent = DayUsage()
        for day in (await self.ledger.days(f"{today[:7]}-01", today, principal)).values():
            spent = add_days(spent, day)
        return spent

    async def alert(self, principal: str) -> str | None:
        """What to tell the principal as a new turn starts: the first time in a day (or
        a month) their spending passed 50 % or 80 % of a daily (monthly) limit, once
        each, across replicas."""
        shares: list[tuple[float, str, Cap]] = []
        held: dict[Period, DayUsage] = {}
        for cap in self.caps(principal):
            if cap.period not in held:
                held[cap.period] = await self.used(principal, cap.period)
            used = held[cap.period]
            if cap.unit == "tokens":
                what = f"{used.usage.total:,} of {int(cap.value):,} tokens"
                shares.append((used.usage.total / cap.value, what, cap))
            else:
                what = f"${used.cost_usd:,.2f} of ${cap.value:,.2f}"
                shares.append((used.cost_usd / cap.value, what, cap))
        if not shares:
            return None
        share, what, cap = max(shares, key=lambda item: item[0])
        reached = [level for level in ALERT_LEVELS if share * 100 >= level]
        if not reached:
            return None
        period = self.period_key(cap.period)
        firsts = [await self.ledger.first_alert(principal, period, level) for level in reached]
        if not firsts[-1]:
            return None
        whose = "today's" if cap.period == "day" else "this month's"
        return (
            f"You have used {int(share * 100)}% of {whose} limit ({what}). "
            f"{self._reset(cap.period)}"
        )

    async def lift(self, principal: str) -> bool:
        """Lift the principal's daily and monthly limits for the rest of today (an
        admin's ``/budget lift``); False when they were lifted already."""
        return await self.ledger.first_alert(principal, self.today(), LIFTED)

    async def refusal(
        self, principal: str, session: TokenUsage, agent: str = ""
    ) -> LimitHit | None:
        """The limit a new turn would start past, if any."""
        return await self.check(principal, session, ModelUsages(), agent)

    async def check(
        self, principal: str, session: TokenUsage, spent: ModelUsages, agent: str = ""
    ) -> LimitHit | None:
        """The first limit reached by ``session`` (stored usage) plus ``spent`` (the turn's,
        not yet stored, each part priced as the model that spent it), or by the
        principal's stored day (or month) plus ``spent``."""
        turn = spent.total
        if self.session_tokens is not None and (used := (session + turn).total) >= (
            self.session_tokens
        ):
            return LimitHit(
                "session_tokens",
                f"This session has used {used:,} tokens, and its limit is "
                f"{self.session_tokens:,} (limits.session_tokens). Send /new to start a "
                "new session.",
            )
        hit = await self._period_hit(principal, spent)
        if hit is not None and await self.ledger.alerted(principal, self.today(), LIFTED):
            hit = None  # an admin lifted today's limits for them
        if hit is None and agent in self.agents:
            hit = await self._agent_hit(agent, spent)
        if hit is not None:
            await self._first_time(f"agent:{agent}" if hit.agent else principal, hit)
        return hit

    async def _agent_hit(self, agent: str, spent: ModelUsages) -> LimitHit | None:
        """The agent's own daily or monthly limit its spending plus ``spent`` reaches."""
        today = self.today()
        periods: tuple[tuple[Period, str], ...] = (("day", today), ("month", f"{today[:7]}-01"))
        for period, first in periods:
            caps = self._agent_caps(agent, period)
            if not caps:
                continue
            used = await self.ledger.agent_span(agent, first, today)
            every = "daily" if period == "day" else "monthly"
            for unit, cap in caps:
                amount: float
                if unit == "tokens":
                    amount = (used.usage + spent.total).total
                    spent_text, cap_text = f"{amount:,} tokens", f"{int(cap):,}"
                else:
                    amount = used.cost_usd + self.prices.known_cost(spent)
                    spent_text, cap_text = f"about ${amount:,.2f}", f"${cap:,.2f}"
                if amount < cap:
                    continue
                when = "today" if period == "day" else "this month"
                return LimitHit(
                    f"{every}_{unit}",
                    f"The agent {agent} has spent {spent_text} {when} over everyone, and "
                    f"its {every} limit is {cap_text} ([[agents]] {agent}). "
                    f"{self._reset(period)} /new with another agent still works.",
                    self.period_key(period),
                    agent,
                )
        return None

    def _agent_caps(self, agent: str, period: Period) -> list[tuple[Unit, float]]:
        own = self.agents[agent]
        return [
            (unit, float(cap))
            for when, unit, name in LIMIT_NAMES
            if when == period and (cap := getattr(own, name)) is not None
        ]

    async def _first_time(self, principal: str, hit: LimitHit) -> None:
        """Tell :attr:`exhausted` the first time the principal reaches a limit in its
        period (once across replicas)."""
        if self.exhausted is None:
            return
        try:
            if await self.ledger.first_alert(principal, hit.period, EXHAUSTED):
                await self.exhausted(principal, hit)
        except Exception:  # noqa: BLE001 - telling the admins never stops a refusal
            log.warning("budget_exhausted_notice_failed", person=principal, limit=hit.limit)

    async def _period_hit(self, principal: str, spent: ModelUsages) -> LimitHit | None:
        """The daily or monthly limit the principal's spending plus ``spent`` reaches."""
        held: dict[Period, DayUsage] = {}
        for cap in self.caps(principal):
            if cap.period not in held:
                held[cap.period] = await self.used(principal, cap.period)
            used = held[cap.period]
            when = "today" if cap.period == "day" else "this month"
            every = "daily" if cap.period == "day" else "monthly"
            if cap.unit == "tokens":
                tokens = (used.usage + spent.total).total
                if tokens >= cap.value:
                    return LimitHit(
                        cap.name,
                        f"You have used {tokens:,} tokens {when}, and the {every} limit is "
                        f"{int(cap.value):,} ({cap.key}). {self._reset(cap.period)}",
                        self.period_key(cap.period),
                    )
            else:
                cost = used.cost_usd + self.prices.known_cost(spent)
                if cost >= cap.value:
                    whose = "Today's" if cap.period == "day" else "This month's"
                    return LimitHit(
                        cap.name,
                        f"{whose} estimated cost is ${cost:,.2f}, and the {every} limit is "
                        f"${cap.value:,.2f} ({cap.key}). {self._reset(cap.period)}",
                        self.period_key(cap.period),
                    )
        return None

    def _own(self, principal: str, name: str) -> Any:
        own = self.budgets.get(principal)
        mine = None if own is None else getattr(own, name)
        return getattr(self, name) if mine is None else mine

    def _key(self, principal: str, name: str) -> str:
        own = self.budgets.get(principal)
        mine = own is not None and getattr(own, name) is not None
        return f"people.{name}" if mine else f"limits.{name}"

    def spend(
        self, principal: str, spent: ModelUsages, session: str = "", agent: str = ""
    ) -> Spend | None:
        """What ``spent`` adds to the principal's day (None when it is nothing), each part
        priced as its own model, for the store to write with the turn (and, by model,
        with its ``session``; by agent and model, with ``agent``)."""
        usage = spent.total
        if not usage.total:
            return None
        breakdown = tuple(
            (model, part, self.prices.cost(model, part) or 0.0) for model, part in spent.parts
        )
        cost = sum(each for _, _, each in breakdown)
        return Spend(principal, self.today(), usage, cost, session, spent, agent, breakdown)

    async def record(self, principal: str, spent: ModelUsages, agent: str = "") -> None:
        """Add ``spent`` to the principal's day on its own (for a turn not stored)."""
        spend = self.spend(principal, spent, agent=agent)
        if spend is not None:
            await self.ledger.record(spend)

    async def spending(
        self, principal: str, session_id: str, session: TokenUsage, model: str
    ) -> Spending:
        """The session's cost prices each model's tokens as that model; tokens the ledger
        has no model for (stored before it kept them, or with no limits) as ``model``."""
        day = await self.ledger.day(principal, self.today())
        stored = await self.ledger.session_models(session_id)
        parts = stored.add(model, _beyond(session, stored.total))
        cost = self.prices.estimate(parts) if parts.parts else self.prices.cost(model, session)
        tokens, dollars = self.daily(principal)
        month_tokens, month_dollars = self.monthly(principal)
        month = None
        if month_tokens is not None or month_dollars is not None:
            month = await self.used(principal, "month")
        return Spending(
            session, cost, day, self.timezone, tokens, dollars, month, month_tokens, month_dollars
        )

    def _reset(self, period: Period = "day") -> str:
        wait = _duration(self.resets_in(period))
        if period == "day":
            return f"It resets at midnight {self.timezone}, in {wait}."
        first = _next(self.clock().astimezone(self._zone).date(), "month")
        return f"It resets on {first.day} {first:%B} ({self.timezone}), in {wait}."


def _next(today: date, period: Period) -> date:
    """The first day of the next period."""
    if period == "day":
        return today + timedelta(days=1)
    return date(today.year + today.month // 12, today.month % 12 + 1, 1)


def _beyond(total: TokenUsage, part: TokenUsage) -> TokenUsage:
    return TokenUsage(
        max(0, total.input_tokens - part.input_tokens),
        max(0, total.output_tokens - part.output_tokens),
        max(0, total.cache_read_tokens - part.cache_read_tokens),
        max(0, total.cache_write_tokens - part.cache_write_tokens),
    )


def _duration(delta: timedelta) -> str:
    minutes = max(1, int(delta.total_seconds() + 59) // 60)
    hours, minutes = divmod(minutes, 60)
    if hours >= 48:
        return f"{(hours + 12) // 24} days"
    if not hours:
        return f"{minutes}m"
    return f"{hours}h {minutes}m" if minutes else f"{hours}h"
