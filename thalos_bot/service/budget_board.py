"""The dashboard's view of each person's day (:class:`BudgetBoard`): what everyone who
spent today spent, against their daily limits, and the owner's "lift for today"."""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from thalos_bot.dashboard.deps import PersonToday
from thalos_bot.runtime.limits import SpendingLimits
from thalos_bot.storage.pg.usage import PgUsageLedger
from thalos_bot.storage.usage import LIFTED, SqliteUsageLedger

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class LimitsBoard:
    limits: SpendingLimits
    ledger: SqliteUsageLedger | PgUsageLedger

    async def today(self) -> list[PersonToday]:
        day = self.limits.today()
        rows = []
        for person, used in (await self.ledger.people(day, day)).items():
            tokens, dollars = self.limits.daily(person)
            lifted = await self.ledger.alerted(person, day, LIFTED)
            rows.append(
                PersonToday(person, used.usage.total, used.cost_usd, tokens, dollars, lifted)
            )
        return rows

    async def lift(self, person: str) -> bool:
        lifted = await self.limits.lift(person)
        log.info("budget_lifted", person=person, by="dashboard", first=lifted)
        return lifted
