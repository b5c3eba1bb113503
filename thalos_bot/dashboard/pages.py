"""The section pages: each reads its model and renders it with :mod:`layout`."""

from __future__ import annotations

from datetime import datetime
from urllib.parse import quote

from starlette.requests import Request

from thalos_bot.cli.chat_intro import ago
from thalos_bot.dashboard.audit import DECISIONS, SHOWN, AuditFilters, read_filters
from thalos_bot.dashboard.catalogue import skill_rows, source_rows
from thalos_bot.dashboard.channels import channel_rows
from thalos_bot.dashboard.chart import Point, bar_line_chart
from thalos_bot.dashboard.deps import DashboardDeps
from thalos_bot.dashboard.layout import count, money, page, table, unavailable, when
from thalos_bot.dashboard.markup import Markup, join, tag
from thalos_bot.dashboard.memory import memory_summary
from thalos_bot.dashboard.schedules import ScheduleRow, apply, schedule_rows
from thalos_bot.dashboard.spend import DaySpend, SessionRow, daily_spend, session_rows, today_in


async def channels_page(deps: DashboardDeps, request: Request, base: str) -> str:
    now = deps.clock()
    rows = channel_rows(deps.channels())
    return page(
        "Channels",
        base,
        "",
        table(
            ("Channel", "State", "Last poll or event", "Last error"),
            (
                (
                    tag("span", row.describe, title=row.name),
                    tag("span", "up", class_="up")
                    if row.up
                    else tag("span", "down", class_="down"),
                    when(row.last_ok_at, now),
                    tag("span", "none", class_="muted")
                    if row.last_error is None
                    else [row.last_error, " ", when(row.last_error_at, now)],
                )
                for row in rows
            ),
            empty="No channels are open.",
        ),
    )


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
            line_format=lambda value: f"${value:.2f}" if value < 100 else f"${value:,.0f}",
            empty=f"No spending recorded in these {len(days)} days.",
        ),
        tag(
            "figcaption",
            f"Last {len(days)} days: {count(tokens)} tokens, about {money(cost)} in all.",
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


async def sessions_page(deps: DashboardDeps, request: Request, base: str) -> str:
    now = deps.clock()
    body: list[object] = [tag("h2", "Tokens and cost per day")]
    if deps.ledger is None:
        body.append(unavailable("The usage ledger"))
    else:
        days = await daily_spend(deps.ledger, today_in(deps.timezone, now))
        body.append(_spend_chart(days))
        body.append(tag("p", f"Days are calendar days in {deps.timezone}.", class_="muted"))
    if deps.sessions is None:
        body += [tag("h2", "Sessions"), unavailable("The session store")]
    else:
        rows = await session_rows(deps.sessions, deps.ledger, deps.prices)
        live = [row for row in rows if row.status == "open"]
        ended = [row for row in rows if row.status != "open"]
        body += [
            tag("h2", "Live sessions"),
            _session_table(live, now, "No session is open."),
            tag("h2", "Recent sessions"),
            _session_table(ended, now, "No session has ended yet."),
        ]
    return page("Sessions and spend", base, "sessions", *body)


_PAST = {"pause": "Paused", "resume": "Resumed", "cancel": "Cancelled"}
_STATE_WORDS = {
    "active": "active",
    "paused": "paused",
    "done": "finished",
    "cancelled": "cancelled",
}


def _action_notice(request: Request) -> Markup | None:
    """What the last pause, resume or cancel did (from the redirect's query)."""
    outcome = request.query_params.get("outcome")
    action = request.query_params.get("action", "")
    schedule_id = request.query_params.get("id", "")
    if outcome == "done" and action in _PAST:
        return tag("p", f"{_PAST[action]} {schedule_id}.", class_="notice", role="status")
    if outcome == "refused" and action in _PAST:
        return tag(
            "p",
            f"Could not {action} {schedule_id}: it is not in a state that allows it any more "
            "(reload to see where it stands).",
            class_="notice refused",
            role="alert",
        )
    return None


def _buttons(deps: DashboardDeps, request: Request, base: str, row: ScheduleRow) -> Markup:
    token = deps.csrf_token(request)
    return join(
        tag(
            "form",
            tag("input", type="hidden", name=deps.csrf_field, value=token),
            tag(
                "button",
                action.capitalize(),
                type="submit",
                class_="danger" if action == "cancel" else None,
                aria_label=f"{action.capitalize()} {row.id}",
            ),
            method="post",
            action=f"{base}/schedules/{quote(row.id, safe='')}/{action}",
            class_="inline",
        )
        for action in row.actions
    )


async def schedules_page(deps: DashboardDeps, request: Request, base: str) -> str:
    if deps.schedules is None:
        return page("Schedules", base, "schedules", unavailable("The schedule store"))
    now = deps.clock()
    principal = deps.principal_of(request)
    owner = principal is not None and deps.is_owner(principal)
    rows = await schedule_rows(deps.schedules)
    headers = ["Schedule", "Task", "Agent", "Timing", "Answers in", "State", "Next run"]
    headers += ["Last result", "Runs"]
    if owner:
        headers.append("Actions")

    def cells(row: ScheduleRow) -> list[object]:
        result: object = tag("span", "not run yet", class_="muted")
        if row.last_result is not None:
            result = [row.last_result, " ", when(row.last_finished, now)]
        cells: list[object] = [
            [tag("code", row.id), tag("br"), tag("span", f"by {row.owner}", class_="muted")],
            row.task,
            row.agent,
            row.timing,
            row.deliver_to,
            _STATE_WORDS[row.state],
            when(row.next_run, now) if row.state in {"active", "paused"} else "—",
            result,
            count(row.runs),
        ]
        if owner:
            cells.append(_buttons(deps, request, base, row))
        return cells

    return page(
        "Schedules",
        base,
        "schedules",
        _action_notice(request),
        table(headers, (cells(row) for row in rows), empty="Nothing is scheduled."),
        None if owner else tag("p", "Only the owner can pause, resume or cancel.", class_="muted"),
    )


async def schedule_action(deps: DashboardDeps, action: str, schedule_id: str) -> str:
    """Apply an owner's action (already checked: owner, CSRF); the outcome's name."""
    if deps.schedules is None or action not in _PAST:
        return "refused"
    outcome = await apply(deps.schedules, action, schedule_id, deps.clock())  # type: ignore[arg-type]
    if outcome == "done":
        deps.on_schedule_change()
    return outcome


def _filter_form(filters: AuditFilters, base: str) -> Markup:
    def field(name: str, label: str, kind: str = "text") -> Markup:
        return tag(
            "label",
            label,
            tag("input", type=kind, name=name, value=filters.values.get(name, "")),
        )

    chosen = filters.values.get("decision", "")
    return tag(
        "form",
        field("agent", "Agent"),
        field("tool", "Tool"),
        tag(
            "label",
            "Decision",
            tag(
                "select",
                tag("option", "any", value=""),
                (tag("option", d, value=d, selected=d == chosen) for d in DECISIONS),
                name="decision",
            ),
        ),
        field("from", "From", "date"),
        field("to", "To", "date"),
        tag("button", "Filter", type="submit"),
        tag("a", "Clear", href=f"{base}/audit"),
        method="get",
        action=f"{base}/audit",
        class_="filters",
    )


async def audit_page(deps: DashboardDeps, request: Request, base: str) -> str:
    if deps.audit is None:
        return page("Audit", base, "audit", unavailable("The approvals audit"))
    now = deps.clock()
    filters = read_filters(request.query_params, deps.timezone)
    found = await deps.audit.search(filters.query)
    rows = (
        (
            when(item.entry.at, now),
            item.agent or tag("span", "unknown", class_="muted"),
            tag("code", item.entry.tool),
            tag("span", item.entry.decision, class_=f"decision {item.entry.decision}"),
            item.entry.decided_by,
            tag("code", item.entry.session_id),
            item.entry.conversation or tag("span", "nobody asked", class_="muted"),
        )
        for item in found
    )
    shown = f"The newest {len(found)} decisions." if len(found) == SHOWN else None
    return page(
        "Audit",
        base,
        "audit",
        tag("p", "Every decision of the permission gate, newest first.", class_="muted"),
        _filter_form(filters, base),
        (tag("p", problem, class_="notice refused", role="alert") for problem in filters.problems),
        table(
            ("When", "Agent", "Tool", "Decision", "Decided by", "Session", "Asked in"),
            rows,
            empty="No decision matches." if any(filters.values.values()) else "No decision yet.",
        ),
        None if shown is None else tag("p", shown, class_="muted"),
    )


_SOURCE_STATES = {"ready": "up", "disabled": "muted", "starting": "muted"}


async def tools_page(deps: DashboardDeps, request: Request, base: str) -> str:
    now = deps.clock()
    sources = source_rows(deps.tool_sources())
    body: list[object] = [
        tag("h2", "Tool sources"),
        table(
            ("Source", "Kind", "State", "Tools"),
            (
                (
                    tag("code", row.name),
                    row.kind,
                    [
                        tag("span", row.state, class_=_SOURCE_STATES.get(row.state, "down")),
                        f": {row.reason}" if row.reason else "",
                    ],
                    [count(row.tool_count), " ", tag("span", ", ".join(row.tools), class_="muted")],
                )
                for row in sources
            ),
            empty="No tool source is configured.",
        ),
        tag("h2", "Skills"),
    ]
    if deps.skills is None:
        body.append(unavailable("The skills store"))
    else:
        skills = await skill_rows(deps.skills)
        body.append(
            table(
                ("Skill", "Description", "State", "Tags", "From", "Synced"),
                (
                    (
                        tag("code", row.name),
                        row.description,
                        "active" if row.active else tag("span", "inactive", class_="muted"),
                        ", ".join(row.tags),
                        tag("code", row.source),
                        when(row.updated_at, now),
                    )
                    for row in skills
                ),
                empty="No skill is stored yet.",
            )
        )
    return page("Tools and skills", base, "tools", *body)


async def memory_page(deps: DashboardDeps, request: Request, base: str) -> str:
    if deps.memory is None:
        return page("Memory", base, "memory", unavailable("Memory"))
    now = deps.clock()
    summary = await memory_summary(deps.memory)
    facts: list[tuple[str, object]] = [
        ("Memories", count(summary.count)),
        ("Archived", count(summary.archived)),
        ("Recall by meaning", summary.mode if summary.mode != "off" else "off (words only)"),
        (
            "Waiting for a reindex",
            "unknown" if summary.pending is None else count(summary.pending),
        ),
    ]
    reindex = summary.reindex
    if reindex is not None:
        detail = f", {reindex.detail}" if reindex.detail else ""
        facts.append(
            (
                "Last reindex",
                [
                    (
                        f"{reindex.state}, {count(reindex.done)} of {count(reindex.total)}"
                        f"{detail}, last moved "
                    ),
                    when(reindex.updated_at, now),
                ],
            )
        )
    return page(
        "Memory",
        base,
        "memory",
        tag("dl", ((tag("dt", name), tag("dd", value)) for name, value in facts), class_="facts"),
    )
