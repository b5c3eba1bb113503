"""Budgets per person: a person's own daily limit in place of ``[limits]``', and the
alerts at 50 % and 80 % of it, told once each a day (on SQLite and PostgreSQL alike:
the record of an alert told is the store's, so two replicas never both tell it)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.pump.harness import running_pump
from tests.storage.backends import BACKENDS, on
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.people import Budget
from thalos_bot.domain.pricing import ModelUsages, PriceTable
from thalos_bot.providers.scripted import ScriptedProvider
from thalos_bot.runtime.limits import LimitHit, SpendingLimits
from thalos_bot.storage.pg.usage import PgUsageLedger
from thalos_bot.storage.usage import MemoryUsageLedger, SqliteUsageLedger, UsageLedger

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
TODAY = "2026-06-01"


@pytest.fixture(params=BACKENDS)
async def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[UsageLedger]:
    async with on(request, tmp_path, SqliteUsageLedger, PgUsageLedger) as opened:
        yield opened


def limits(ledger: UsageLedger) -> SpendingLimits:
    return SpendingLimits(
        ledger,
        PriceTable({}),
        daily_tokens=100_000,
        clock=lambda: NOW,
        budgets={"ana": Budget(daily_tokens=1_000)},
    )


def tokens(n: int) -> TokenUsage:
    return TokenUsage(input_tokens=n)


async def test_a_persons_own_limit_replaces_the_default(ledger: UsageLedger) -> None:
    spending = limits(ledger)
    assert spending.daily("ana") == (1_000, None)
    assert spending.daily("ben") == (100_000, None)
    await ledger.add("ana", TODAY, tokens(1_000), 0.0)
    await ledger.add("ben", TODAY, tokens(1_000), 0.0)
    hit = await spending.refusal("ana", TokenUsage())
    assert hit is not None
    assert "(people.daily_tokens)" in hit.notice
    assert await spending.refusal("ben", TokenUsage()) is None


async def test_each_alert_is_told_once(ledger: UsageLedger) -> None:
    spending = limits(ledger)
    assert await spending.alert("ana") is None  # nothing spent yet
    await ledger.add("ana", TODAY, tokens(499), 0.0)
    assert await spending.alert("ana") is None
    await ledger.add("ana", TODAY, tokens(1), 0.0)
    told = await spending.alert("ana")
    assert told is not None
    assert told.startswith("You have used 50% of today's limit (500 of 1,000 tokens).")
    assert await spending.alert("ana") is None  # once
    await ledger.add("ana", TODAY, tokens(320), 0.0)
    eighty = await spending.alert("ana")
    assert eighty is not None
    assert "82%" in eighty
    assert await limits(ledger).alert("ana") is None  # another replica: still once
    assert await spending.alert("ben") is None  # far below the default


async def test_a_jump_past_both_levels_tells_once(ledger: UsageLedger) -> None:
    spending = limits(ledger)
    await ledger.add("ana", TODAY, tokens(900), 0.0)
    told = await spending.alert("ana")
    assert told is not None
    assert "90%" in told
    assert await spending.alert("ana") is None


async def test_an_admin_lifts_a_persons_limit_for_the_day(ledger: UsageLedger) -> None:
    spending = limits(ledger)
    await ledger.add("ana", TODAY, tokens(1_000), 0.0)
    assert await spending.refusal("ana", TokenUsage()) is not None
    assert await spending.lift("ana")
    assert not await spending.lift("ana")  # once is enough
    assert await spending.refusal("ana", TokenUsage()) is None  # for the rest of today
    tomorrow = SpendingLimits(
        ledger,
        PriceTable({}),
        clock=lambda: datetime(2026, 6, 2, 12, 0, tzinfo=UTC),
        budgets={"ana": Budget(daily_tokens=1)},
    )
    await ledger.add("ana", "2026-06-02", tokens(5), 0.0)
    assert await tomorrow.refusal("ana", TokenUsage()) is not None  # a new day: not lifted


async def test_budget_shows_yours_and_only_an_admin_lifts() -> None:
    ledger = MemoryUsageLedger()
    today = datetime.now(UTC).date().isoformat()
    await ledger.add("owner", today, tokens(1_234), 0.0)
    spending = SpendingLimits(ledger, PriceTable({}), daily_tokens=10_000)
    async with running_pump(ScriptedProvider(), budgets=spending) as h:
        await h.source.send("/budget").wait()
        await h.source.send("/budget lift ben").wait()
        await h.source.send("/budget raise").wait()
    told = h.adapter.notices()
    assert told[0] == "Spent today (UTC): 1,234 of 10,000 tokens, $0.00"
    assert told[1] == "Only a person with the admin role can lift a budget."
    assert told[2].startswith("/budget shows yours")
    assert not await ledger.alerted("ben", today, 0)


def monthly(ledger: UsageLedger, **extra: object) -> SpendingLimits:
    return SpendingLimits(
        ledger,
        PriceTable({}),
        monthly_tokens=10_000,
        clock=lambda: NOW,
        budgets={"ana": Budget(monthly_tokens=3_000)},
        **extra,  # type: ignore[arg-type]
    )


async def test_a_monthly_limit_counts_every_day_of_the_month_and_no_other(
    ledger: UsageLedger,
) -> None:
    spending = monthly(ledger)
    assert spending.monthly("ana") == (3_000, None)
    assert spending.monthly("ben") == (10_000, None)
    await ledger.add("ana", "2026-05-31", tokens(2_900), 0.0)  # last month: not counted
    await ledger.add("ana", "2026-06-01", tokens(1_000), 0.0)
    assert await spending.refusal("ana", TokenUsage()) is None
    later = SpendingLimits(
        ledger,
        PriceTable({}),
        clock=lambda: datetime(2026, 6, 20, 9, 0, tzinfo=UTC),
        budgets={"ana": Budget(monthly_tokens=3_000)},
    )
    await ledger.add("ana", "2026-06-19", tokens(2_000), 0.0)
    hit = await later.refusal("ana", TokenUsage())
    assert hit is not None
    assert hit.limit == "monthly_tokens"
    assert hit.period == "2026-06"
    assert hit.notice == (
        "You have used 3,000 tokens this month, and the monthly limit is 3,000 "
        "(people.monthly_tokens). It resets on 1 July (UTC), in 11 days."
    )
    assert await later.refusal("ben", TokenUsage()) is None


async def test_monthly_alerts_are_told_once_a_month(ledger: UsageLedger) -> None:
    spending = monthly(ledger)
    await ledger.add("ana", TODAY, tokens(1_600), 0.0)
    told = await spending.alert("ana")
    assert told is not None
    assert told.startswith("You have used 53% of this month's limit (1,600 of 3,000 tokens).")
    assert "It resets on 1 July" in told
    assert await spending.alert("ana") is None
    next_day = SpendingLimits(
        ledger,
        PriceTable({}),
        clock=lambda: datetime(2026, 6, 2, 8, 0, tzinfo=UTC),
        budgets={"ana": Budget(monthly_tokens=3_000)},
    )
    assert await next_day.alert("ana") is None  # a new day, the same month: told already


async def test_the_first_time_a_limit_is_reached_is_told_once_a_period(
    ledger: UsageLedger,
) -> None:
    told: list[tuple[str, str, str]] = []

    async def exhausted(principal: str, hit: LimitHit) -> None:
        told.append((principal, hit.limit, hit.period))

    spending = monthly(ledger, exhausted=exhausted)
    await ledger.add("ana", TODAY, tokens(3_000), 0.0)
    assert await spending.refusal("ana", TokenUsage()) is not None
    assert await spending.refusal("ana", TokenUsage()) is not None
    assert await monthly(ledger, exhausted=exhausted).refusal("ana", TokenUsage()) is not None
    assert told == [("ana", "monthly_tokens", "2026-06")]  # once, across replicas
    assert await spending.lift("ana")
    assert await spending.refusal("ana", TokenUsage()) is None  # lifted for today


async def test_an_agents_own_limit_counts_everyone_and_is_told_once(
    ledger: UsageLedger,
) -> None:
    told: list[tuple[str, str]] = []

    async def exhausted(principal: str, hit: LimitHit) -> None:
        told.append((principal, hit.agent))

    spending = SpendingLimits(
        ledger,
        PriceTable({}),
        clock=lambda: NOW,
        agents={"coder": Budget(daily_tokens=1_000)},
        exhausted=exhausted,
    )
    for who, used in (("ana", 600), ("ben", 400)):
        spend = spending.spend(who, ModelUsages().add("m", tokens(used)), agent="coder")
        assert spend is not None
        await ledger.record(spend)
    hit = await spending.refusal("cy", TokenUsage(), "coder")
    assert hit is not None
    assert hit.agent == "coder"
    assert hit.notice.startswith(
        "The agent coder has spent 1,000 tokens today over everyone, and its daily limit "
        "is 1,000 ([[agents]] coder)."
    )
    assert await spending.refusal("cy", TokenUsage(), "helper") is None  # another agent
    assert await spending.refusal("ana", TokenUsage(), "coder") is not None
    assert told == [("agent:coder", "coder")]  # the admins told once
