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
daily limit resets at the next midnight there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from thalos_bot.domain.clock import utc_now
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.people import Budget
from thalos_bot.domain.pricing import ModelUsages, PriceTable
from thalos_bot.storage.protocol import Spend
from thalos_bot.storage.usage import LIFTED, DayUsage, UsageLedger

LIMIT_REACHED = "limit-reached"
BUDGET_ALERT = "budget-alert"
ALERT_LEVELS = (50, 80)
"""Percentages of a daily limit at which a person is told, once each a day (at 100 %
the limit itself refuses the turn, saying when it resets)."""


@dataclass(frozen=True, slots=True)
class LimitHit:
    limit: str
    """The config key: ``session_tokens``, ``daily_tokens`` or ``daily_cost_usd``."""
    notice: str
    """What the user reads: which limit, and when it resets."""


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


@dataclass(slots=True)
class SpendingLimits:
    ledger: UsageLedger
    prices: PriceTable
    session_tokens: int | None = None
    daily_tokens: int | None = None
    daily_cost_usd: float | None = None
    timezone: str = "UTC"
    clock: Callable[[], datetime] = utc_now
    budgets: Mapping[str, Budget] = field(default_factory=dict)
    """People whose daily limits are their own (``[[people]]``); a limit they leave
    unset is ``[limits]``'."""
    _zone: ZoneInfo = field(init=False)

    def __post_init__(self) -> None:
        self._zone = ZoneInfo(self.timezone)

    def today(self) -> str:
        return self.clock().astimezone(self._zone).date().isoformat()

    def resets_in(self) -> timedelta:
        now = self.clock().astimezone(self._zone)
        midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), self._zone)
        return midnight - now

    def daily(self, principal: str) -> tuple[int | None, float | None]:
        """The principal's daily token and cost limits."""
        own = self.budgets.get(principal, Budget())
        tokens = own.daily_tokens if own.daily_tokens is not None else self.daily_tokens
        cost = own.daily_cost_usd if own.daily_cost_usd is not None else self.daily_cost_usd
        return tokens, cost

    async def alert(self, principal: str) -> str | None:
        """What to tell the principal as a new turn starts: the first time today their
        spending passed 50 % or 80 % of a daily limit (once each, across replicas)."""
        tokens, cost = self.daily(principal)
        if tokens is None and cost is None:
            return None
        today = self.today()
        day = await self.ledger.day(principal, today)
        shares = []
        if tokens is not None:
            shares.append((day.usage.total / tokens, f"{day.usage.total:,} of {tokens:,} tokens"))
        if cost is not None:
            shares.append((day.cost_usd / cost, f"${day.cost_usd:,.2f} of ${cost:,.2f}"))
        share, what = max(shares)
        reached = [level for level in ALERT_LEVELS if share * 100 >= level]
        if not reached:
            return None
        firsts = [await self.ledger.first_alert(principal, today, level) for level in reached]
        if not firsts[-1]:
            return None
        return f"You have used {int(share * 100)}% of today's limit ({what}). {self._reset()}"

    async def lift(self, principal: str) -> bool:
        """Lift the principal's daily limits for the rest of today (an admin's ``/budget
        lift``); False when they were lifted already."""
        return await self.ledger.first_alert(principal, self.today(), LIFTED)

    async def refusal(self, principal: str, session: TokenUsage) -> LimitHit | None:
        """The limit a new turn would start past, if any."""
        return await self.check(principal, session, ModelUsages())

    async def check(
        self, principal: str, session: TokenUsage, spent: ModelUsages
    ) -> LimitHit | None:
        """The first limit reached by ``session`` (stored usage) plus ``spent`` (the turn's,
        not yet stored, each part priced as the model that spent it), or by the
        principal's stored day plus ``spent``."""
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
        hit = await self._daily_hit(principal, spent)
        if hit is not None and await self.ledger.alerted(principal, self.today(), LIFTED):
            return None  # an admin lifted today's limits for them
        return hit

    async def _daily_hit(self, principal: str, spent: ModelUsages) -> LimitHit | None:
        """The daily limit the principal's day plus ``spent`` reaches, if any."""
        daily_tokens, daily_cost = self.daily(principal)
        if daily_tokens is None and daily_cost is None:
            return None
        day = await self.ledger.day(principal, self.today())
        if daily_tokens is not None and (used := (day.usage + spent.total).total) >= daily_tokens:
            return LimitHit(
                "daily_tokens",
                f"You have used {used:,} tokens today, and the daily limit is "
                f"{daily_tokens:,} ({self._key(principal, 'daily_tokens')}). {self._reset()}",
            )
        if daily_cost is not None:
            cost = day.cost_usd + self.prices.known_cost(spent)
            if cost >= daily_cost:
                return LimitHit(
                    "daily_cost_usd",
                    f"Today's estimated cost is ${cost:,.2f}, and the daily limit is "
                    f"${daily_cost:,.2f} ({self._key(principal, 'daily_cost_usd')}). "
                    f"{self._reset()}",
                )
        return None

    def _key(self, principal: str, name: str) -> str:
        own = self.budgets.get(principal)
        mine = own is not None and getattr(own, name) is not None
        return f"people.{name}" if mine else f"limits.{name}"

    def spend(self, principal: str, spent: ModelUsages, session: str = "") -> Spend | None:
        """What ``spent`` adds to the principal's day (None when it is nothing), each part
        priced as its own model, for the store to write with the turn (and, by model,
        with its ``session``)."""
        usage = spent.total
        if not usage.total:
            return None
        cost = self.prices.known_cost(spent)
        return Spend(principal, self.today(), usage, cost, session, spent)

    async def record(self, principal: str, spent: ModelUsages) -> None:
        """Add ``spent`` to the principal's day on its own (for a turn not stored)."""
        spend = self.spend(principal, spent)
        if spend is not None:
            await self.ledger.add(spend.principal, spend.day, spend.usage, spend.cost_usd)

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
        return Spending(session, cost, day, self.timezone, tokens, dollars)

    def _reset(self) -> str:
        return f"It resets at midnight {self.timezone}, in {_duration(self.resets_in())}."


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
    if not hours:
        return f"{minutes}m"
    return f"{hours}h {minutes}m" if minutes else f"{hours}h"
