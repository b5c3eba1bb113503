"""``[limits]`` as the runtime's spending limits: the daemon's, and what ``status`` and
``spend`` report, without opening the host (a light import for one-shot commands)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from thalos_bot.domain.people import Budget
from thalos_bot.runtime.limits import SpendingLimits

if TYPE_CHECKING:
    from thalos_bot.config.models import Settings
    from thalos_bot.storage.usage import UsageLedger


def spending_limits(settings: Settings, ledger: UsageLedger) -> SpendingLimits:
    """``[limits]`` over the usage ledger (kept even with no limit set, for /status)."""
    limits = settings.limits
    return SpendingLimits(
        ledger,
        settings.price_table(),
        session_tokens=limits.session_tokens,
        daily_tokens=limits.daily_tokens,
        daily_cost_usd=limits.daily_cost_usd,
        monthly_tokens=limits.monthly_tokens,
        monthly_cost_usd=limits.monthly_cost_usd,
        timezone=limits.timezone,
        budgets=settings.directory().budgets(),
        agents={a.id: a.budget() for a in settings.agents if a.budget() != Budget()},
    )
