"""Sessions and spend: the read models over a real SQLite store (recent sessions with
their cost by model, 30 days of spending with the empty days), and the page."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from tests.dashboard.host import GUEST, OWNER, client, host_deps, serving, with_deps
from thalos_bot.dashboard.deps import DashboardDeps
from thalos_bot.dashboard.spend import daily_spend, session_rows, today_in
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.domain.messages import Message
from thalos_bot.domain.pricing import ModelPrice, ModelUsages, PriceTable
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.protocol import SessionRecord, Spend
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.storage.usage import SqliteUsageLedger

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
PRICES = PriceTable({"claude-x": ModelPrice(3.0, 15.0, 0.3, 3.75)})


async def _fill(db: Database) -> tuple[SqliteSessionStore, SqliteUsageLedger]:
    sessions, ledger = SqliteSessionStore(db), SqliteUsageLedger(db)
    at = NOW - timedelta(hours=3)
    for sid, agent, owner in (
        ("s_live", "helper", "alice"),
        ("s_done", "coder", "bob"),
        ("s_unpriced", "helper", "<b>eve</b>"),
    ):
        await sessions.create(SessionRecord(SessionId(sid), AgentId(agent), owner, "open", at, at))
    usage = TokenUsage(1_000_000, 100_000)
    await sessions.commit_turn(
        SessionId("s_live"),
        [Message.user("hi")],
        usage,
        NOW - timedelta(minutes=1),
        spend=Spend(
            "alice", "2026-12-01", usage, 4.5, "s_live", ModelUsages().add("claude-x", usage)
        ),
    )
    other = TokenUsage(10, 5)
    await sessions.commit_turn(
        SessionId("s_unpriced"),
        [Message.user("hi")],
        other,
        NOW - timedelta(minutes=30),
        spend=Spend(
            "eve", "2026-11-20", other, 0.0, "s_unpriced", ModelUsages().add("local-llm", other)
        ),
    )
    await sessions.close(SessionId("s_done"), NOW - timedelta(hours=2))
    await ledger.add("bob", "2026-11-02", TokenUsage(500, 0), 0.25)
    await ledger.add("bob", "2026-11-01", TokenUsage(9_999, 0), 9.0)  # 31 days ago: not plotted
    return sessions, ledger


@pytest.mark.anyio
async def test_recent_sessions_carry_agent_turns_tokens_and_cost(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "t.db", migrations=ALL_MIGRATIONS) as db:
        sessions, ledger = await _fill(db)
        rows = await session_rows(sessions, ledger, PRICES)
    assert [(r.id, r.agent, r.status, r.turns, r.tokens) for r in rows] == [
        ("s_live", "helper", "open", 1, 1_100_000),
        ("s_unpriced", "helper", "open", 1, 15),
        ("s_done", "coder", "closed", 0, 0),
    ]
    assert rows[0].cost_usd == pytest.approx(3.0 + 1.5)
    assert rows[1].cost_usd is None  # its model has no price: unknown, not $0
    assert rows[2].cost_usd == 0.0


@pytest.mark.anyio
async def test_thirty_days_end_today_in_the_ledger_zone_with_empty_days(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "t.db", migrations=ALL_MIGRATIONS) as db:
        _, ledger = await _fill(db)
        days = await daily_spend(ledger, date(2026, 12, 1))
    assert len(days) == 30
    assert (days[0].day, days[-1].day) == (date(2026, 11, 2), date(2026, 12, 1))
    assert (days[0].tokens, days[0].cost_usd, days[0].turns) == (500, 0.25, 1)
    assert days[18].day == date(2026, 11, 20)
    assert days[18].tokens == 15
    assert (days[-1].tokens, days[-1].cost_usd) == (1_100_000, 4.5)
    assert sum(1 for d in days if d.tokens == 0) == 27
    assert today_in("Pacific/Kiritimati", datetime(2026, 12, 1, 11, tzinfo=UTC)) == date(
        2026, 12, 2
    )


def test_the_page_shows_the_plot_and_both_tables_escaped(tmp_path: Path) -> None:
    async def deps(db: Database) -> DashboardDeps:
        sessions, ledger = await _fill(db)
        return host_deps(sessions=sessions, ledger=ledger, prices=PRICES, clock=lambda: NOW)

    with serving(tmp_path / "t.db", deps, OWNER) as served:
        response = served.client.get("/dashboard/sessions")
    assert response.status_code == 200
    body = response.text
    assert "Everyone&#x27;s sessions and spend." in body
    assert body.count("<svg") == 1
    assert body.count('class="bar"') == 30
    assert "Tokens and cost per day, 2026-11-02 to 2026-12-01" in body
    assert "Last 30 days: 1,100,515 tokens, about $4.75 in all." in body
    live = body.index("Live sessions")
    recent = body.index("Recent sessions")
    assert live < body.index("s_live") < body.index("s_unpriced") < recent < body.index("s_done")
    assert "$4.50" in body
    assert "unknown" in body
    assert "&lt;b&gt;eve&lt;/b&gt;" in body
    assert "<b>eve</b>" not in body
    assert "1,100,000" in body
    assert "<script" not in body


def test_a_person_who_is_not_an_owner_sees_only_their_own(tmp_path: Path) -> None:
    async def deps(db: Database) -> DashboardDeps:
        sessions, ledger = await _fill(db)
        return with_deps(
            host_deps(sessions=sessions, ledger=ledger, prices=PRICES, clock=lambda: NOW),
            person_of=lambda login: "bob" if login == GUEST else login,
        )

    with serving(tmp_path / "t.db", deps, GUEST) as served:
        body = served.client.get("/dashboard/sessions").text
    assert "Your own (bob)." in body
    assert "s_done" in body
    assert "s_live" not in body
    assert "eve" not in body
    assert "Last 30 days: 500 tokens, about $0.25 in all." in body  # bob's alone


def test_without_a_ledger_or_sessions_the_page_says_so() -> None:
    body = client(host_deps()).get("/dashboard/sessions").text
    assert "The usage ledger is not available in this daemon." in body
    assert "The session store is not available in this daemon." in body


def test_the_caption_reads_as_english_for_a_cost_under_a_cent() -> None:
    from thalos_bot.dashboard.spend import DaySpend
    from thalos_bot.dashboard.views.sessions import _spend_chart

    days = [DaySpend(date(2026, 12, 1), 120, 0.004, 1), DaySpend(date(2026, 12, 2), 0, 0.0, 0)]
    assert "Last 2 days: 120 tokens, under $0.01 in all." in str(_spend_chart(days))
    days = [DaySpend(date(2026, 12, 1), 120, 0.25, 1), DaySpend(date(2026, 12, 2), 0, 0.0, 0)]
    assert "Last 2 days: 120 tokens, about $0.25 in all." in str(_spend_chart(days))


def test_the_owner_sees_each_persons_day_and_lifts_a_limit(tmp_path: Path) -> None:
    """People today: each person against their daily limits; the owner's "Lift for today"
    (a form with the CSRF token) lifts it, a guest can neither see nor post it."""
    from tests.dashboard.host import token_for
    from thalos_bot.domain.people import Budget
    from thalos_bot.runtime.limits import SpendingLimits
    from thalos_bot.service.budget_board import LimitsBoard

    async def deps(db: Database) -> DashboardDeps:
        sessions, ledger = await _fill(db)
        limits = SpendingLimits(
            ledger,
            PRICES,
            daily_tokens=2_000_000,
            clock=lambda: NOW,
            budgets={"bob": Budget(daily_cost_usd=1.0)},
        )
        return host_deps(
            sessions=sessions,
            ledger=ledger,
            prices=PRICES,
            clock=lambda: NOW,
            budgets=LimitsBoard(limits, ledger),
        )

    with serving(tmp_path / "t.db", deps, OWNER) as served:
        body = served.client.get("/dashboard/sessions").text
        assert "People today" in body
        assert "1,100,000 of 2,000,000" in body  # alice, against the default daily limit
        assert body.count("Lift for today") == 1
        refused = served.as_(GUEST).client.post(
            "/dashboard/people/alice/lift", data={"csrf_token": token_for(GUEST)}
        )
        assert refused.status_code == 403
        forged = served.as_(OWNER).client.post(
            "/dashboard/people/alice/lift", data={"csrf_token": "x"}
        )
        assert forged.status_code == 403
        done = served.client.post(
            "/dashboard/people/alice/lift",
            data={"csrf_token": token_for(OWNER)},
            follow_redirects=True,
        )
        assert done.status_code == 200
        assert "alice&#x27;s limits are lifted for the rest of today." in done.text
        assert "lifted for today" in done.text
        guest = served.as_(GUEST).client.get("/dashboard/sessions").text
    assert "People today" not in guest
