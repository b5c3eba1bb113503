"""The sessions-and-spend section's read models: recent sessions with their cost, and
tokens and cost per day (every principal's, from the usage ledger) for a run of days."""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from thalos_bot.dashboard.deps import SessionListing, SpendLedger
from thalos_bot.domain.pricing import PriceTable
from thalos_bot.storage.protocol import SessionStatus

RECENT_SESSIONS = 50
PLOTTED_DAYS = 30


@dataclass(frozen=True, slots=True)
class SessionRow:
    id: str
    agent: str
    owner: str
    status: SessionStatus
    created_at: datetime
    updated_at: datetime
    turns: int
    tokens: int
    cost_usd: float | None
    """Each model's tokens at its price; None when a model has no price or the ledger
    holds no model for the session's tokens."""


@dataclass(frozen=True, slots=True)
class DaySpend:
    day: date
    tokens: int
    cost_usd: float
    turns: int


async def session_rows(
    sessions: SessionListing,
    ledger: SpendLedger | None,
    prices: PriceTable,
    limit: int = RECENT_SESSIONS,
    owner: str | None = None,
) -> list[SessionRow]:
    """The ``limit`` most recently active sessions (``owner``'s only, when given),
    newest first."""
    rows: list[SessionRow] = []
    for record in await sessions.recent(limit):
        if owner is not None and record.owner != owner:
            continue
        cost: float | None = None
        if ledger is not None:
            models = await ledger.session_models(record.id)
            if models.parts and models.total.total >= record.usage.total:
                cost = prices.estimate(models)
        if record.usage.total == 0:
            cost = 0.0
        rows.append(
            SessionRow(
                id=str(record.id),
                agent=str(record.agent_id),
                owner=record.owner,
                status=record.status,
                created_at=record.created_at,
                updated_at=record.updated_at,
                turns=record.turns,
                tokens=record.usage.total,
                cost_usd=cost,
            )
        )
    return rows


def today_in(timezone: str, now: datetime) -> date:
    """The calendar day ``now`` falls on in the ledger's time zone."""
    return now.astimezone(zoneinfo.ZoneInfo(timezone)).date()


async def daily_spend(
    ledger: SpendLedger, last: date, days: int = PLOTTED_DAYS, principal: str | None = None
) -> list[DaySpend]:
    """``days`` consecutive days ending with ``last``, oldest first (everyone's, or
    ``principal``'s); a day with nothing recorded is there with zeros."""
    first = last - timedelta(days=days - 1)
    held = await ledger.days(first.isoformat(), last.isoformat(), principal)
    out: list[DaySpend] = []
    for offset in range(days):
        day = first + timedelta(days=offset)
        spent = held.get(day.isoformat())
        if spent is None:
            out.append(DaySpend(day, 0, 0.0, 0))
        else:
            out.append(DaySpend(day, spent.usage.total, spent.cost_usd, spent.turns))
    return out
