"""The sessions-and-spend section: the 30-day plot and the live and recent sessions."""

from __future__ import annotations

from datetime import datetime
from urllib.parse import quote

from starlette.requests import Request

from thalos_bot.dashboard.chart import Point, bar_line_chart
from thalos_bot.dashboard.deps import DashboardDeps, PersonToday
from thalos_bot.dashboard.layout import count, money, page, table, unavailable, when
from thalos_bot.dashboard.markup import Markup, tag
from thalos_bot.dashboard.spend import DaySpend, SessionRow, daily_spend, session_rows, today_in
from thalos_bot.domain.clock import ago


def dollars(value: float) -> str:
    """An axis label in USD with the digits a small step needs ($0.0025, $0.50, $120)."""
    if value == 0:
        return "$0"
    if value >= 100:
        return f"${value:,.0f}"
    return f"${value:.2f}" if value >= 0.1 else f"${value:.2g}"


def _spend_chart(days: list[DaySpend]) -> Markup:
    points = [
        Point(
            f"{d.day:%m-%d}",
            d.tokens,
            d.cost_usd,
            f"{d.day.isoformat()}: {count(d.tokens)} tokens, {money(d.cost_usd)}, "
            f"{count(d.turns)} turns",
        )
        for d in days
    ]
    tokens = sum(d.tokens for d in days)
    cost = sum(d.cost_usd for d in days)
    first, last = days[0].day, days[-1].day
    return tag(
        "figure",
        bar_line_chart(
            points,
            title=f"Tokens and cost per day, {first.isoformat()} to {last.isoformat()}",
            bar_name="tokens",
            line_name="cost (USD)",
            line_format=dollars,
            empty=f"No spending recorded in these {len(days)} days.",
        ),
        tag(
            "figcaption",
            f"Last {len(days)} days: {count(tokens)} tokens, "
            + (f"about {money(cost)}" if cost >= 0.01 else money(cost))
            + " in all.",
        ),
        class_="chart",
    )


def _session_table(rows: list[SessionRow], now: datetime, empty: str) -> Markup:
    return table(
        ("Session", "Agent", "Owner", "Age", "Last active", "Turns", "Tokens", "Cost"),
        (
            (
                tag("code", row.id),
                row.agent,
                row.owner,
                ago(now - row.created_at).removesuffix(" ago"),
                when(row.updated_at, now),
                count(row.turns),
                count(row.tokens),
                money(row.cost_usd),
            )
            for row in rows
        ),
        empty=empty,
    )


def _against(amount: str, limit: str | None) -> str:
    return amount if limit is None else f"{amount} of {limit}"


def _tokens(row: PersonToday) -> str:
    limit = row.daily_tokens
    return _against(count(row.tokens), None if limit is None else count(limit))


def _cost(row: PersonToday) -> str:
    limit = row.daily_cost_usd
    return _against(money(row.cost_usd), None if limit is None else money(limit))


async def _people_today(deps: DashboardDeps, request: Request, base: str) -> list[object]:
    """The owner's view of each person's day, with "Lift for today" per person."""
    if deps.budgets is None:
        return []
    token = deps.csrf_token(request)
    rows = []
    for row in await deps.budgets.today():
        limited = row.daily_tokens is not None or row.daily_cost_usd is not None
        if row.lifted:
            action: object = "lifted for today"
        elif limited:
            action = tag(
                "form",
                tag("input", type="hidden", name=deps.csrf_field, value=token),
                tag(
                    "button",
                    "Lift for today",
                    type="submit",
                    aria_label=f"Lift {row.person}'s limits for today",
                ),
                method="post",
                action=f"{base}/people/{quote(row.person, safe='')}/lift",
                class_="inline",
            )
        else:
            action = "no daily limit"
        rows.append((row.person, _tokens(row), _cost(row), action))
    body: list[object] = [tag("h2", "People today")]
    lifted = request.query_params.get("lifted")
    if lifted:
        said = f"{lifted}'s limits are lifted for the rest of today."
        body.append(tag("p", said, class_="notice", role="status"))
    empty = "Nobody has spent anything today."
    body.append(table(("Person", "Tokens", "Cost", "Limits"), rows, empty=empty))
    return body


async def sessions_page(deps: DashboardDeps, request: Request, base: str) -> str:
    now = deps.clock()
    whose = deps.scope(request)
    body: list[object] = [
        tag("p", "Everyone's sessions and spend." if whose is None else f"Your own ({whose}).")
    ]
    body.append(tag("h2", "Tokens and cost per day"))
    if deps.ledger is None:
        body.append(unavailable("The usage ledger"))
    else:
        days = await daily_spend(deps.ledger, today_in(deps.timezone, now), principal=whose)
        body.append(_spend_chart(days))
        body.append(tag("p", f"Days are calendar days in {deps.timezone}.", class_="muted"))
    if whose is None:
        body += await _people_today(deps, request, base)
    if deps.sessions is None:
        body += [tag("h2", "Sessions"), unavailable("The session store")]
    else:
        rows = await session_rows(deps.sessions, deps.ledger, deps.prices, owner=whose)
        live = [row for row in rows if row.status == "open"]
        ended = [row for row in rows if row.status != "open"]
        body += [
            tag("h2", "Live sessions"),
            _session_table(live, now, "No session is open."),
            tag("h2", "Recent sessions"),
            _session_table(ended, now, "No session has ended yet."),
        ]
    return page("Sessions and spend", base, "sessions", *body)
